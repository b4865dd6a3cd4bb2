"""Go rules: board core (compiled), coordinates, game with history, scoring, SGF."""
