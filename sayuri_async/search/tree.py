"""The search tree and a game's search workspace, as flat numpy records.

Vocabulary
----------
nodes       ``[capacity]`` records of NODE_DTYPE. A node's children are
            contiguous: ``first .. first + nchild``, laid out so that the
            visited children always form a prefix: PUCT only ever gives a
            first visit to the unvisited child of highest prior, which
            ``puct.select_child`` swaps to the front of the unvisited part
            on demand (``ordered`` counts the front children known to be in
            that order; -1 means "no order", as at a Gumbel root, and makes
            selection scan every child). ``wsum`` is the sum of
            values backed up through the node, from the point of view of the
            player who made the move into it, so ``wsum / visits`` is that
            player's Q for choosing this child. A child whose move repeats an
            earlier position (superko), or that the caller ruled out at the
            root (``Search.restrict_root``), gets prior -1: selection skips it.
workspace   ``[1]`` record of WS_DTYPE per game: the root position, a scratch
            board that each playout replays from the root, the game's position
            hashes (superko; a hash set, so a check costs the same at move 300
            as at move 3), the paths of the leaves waiting on the network
            (``paths[i, :depths[i] + 1]``, leaf last), the search parameters
            and the tree's bookkeeping (root node, nodes used).
pending     a leaf's legal moves are listed in the workspace when the descent
            reaches it (the scratch board moves on); until the network
            answers it is PENDING and another descent that meets it stops (a
            collision). The answer gives it its children, priors included,
            in one pass (``expand``).
virtual loss  every node on a waiting leaf's path counts one more visit and
            one more loss for the player who moved into it, so the next
            descents of the same search spread out; ``finish`` replaces it
            with the real value.
symmetry    with random symmetry on, each leaf is shown to the network in one
            of the 8 board symmetries (``symmetry.py``), drawn per request;
            its policy is read back through ``sym_map``.
value       in ``[-1, 1]`` for the side to move at a node (win minus loss);
            winrate = (value + 1) / 2.
params      float64 vector indexed by the P_* constants (PUCT and FPU).

The compiled functions here are shared by PUCT and Gumbel search: allocation,
expansion from a policy row, backup, root statistics and tree reuse.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go import board as B

MAX_DEPTH = 512
MAX_GAME_POSITIONS = 2048
GAME_TABLE = 4096  # open-addressing set of the game's position hashes (power of two)
TABLE_SALT = np.uint64(0x9E3779B97F4A7C15)  # stored keys are hash ^ salt, so 0 marks a free slot
MAX_LEAVES = 16  # leaves one search may have waiting on the network at once
MAX_ACTIONS = B.MAX_N * B.MAX_N + 1
SYM_BUF = 64 * B.MAX_N * B.MAX_N  # planes x points of the largest encoder and board
PENDING = 1  # node state: children allocated, priors not yet known

NODE_DTYPE = np.dtype(
    [
        ("visits", np.int32),
        ("first", np.int32),
        ("nchild", np.int16),
        ("action", np.int16),
        ("ordered", np.int16),
        ("state", np.int8),
        ("prior", np.float32),
        ("wsum", np.float64),
    ],
    align=True,
)

# params vector
P_C_INIT, P_C_BASE, P_FPU_REDUCTION, P_FPU_ROOT, P_MAX_MOVES_FACTOR, P_RANDOM_SYMMETRY = 0, 1, 2, 3, 4, 5
N_PARAMS = 8

WS_DTYPE = np.dtype(
    [
        ("root", B.BOARD_DTYPE),
        ("scratch", B.BOARD_DTYPE),
        ("game_table", np.uint64, (GAME_TABLE,)),
        ("paths", np.int32, (MAX_LEAVES, MAX_DEPTH)),
        ("path_hash", np.uint64, (MAX_DEPTH,)),
        ("params", np.float64, (N_PARAMS,)),
        ("n_game_hash", np.int32),  # positions in game_table
        ("game_mask", np.int32),  # game_table slots in use - 1 (a power of two - 1)
        ("depths", np.int32, (MAX_LEAVES,)),
        ("leaf_sym", np.int32, (MAX_LEAVES,)),  # symmetry the leaf was shown to the network in
        ("sym_map", np.int16, (8, MAX_ACTIONS)),  # sym_map[k, a]: where action a goes under symmetry k
        ("sym_n", np.int32),  # board size sym_map is for
        ("encoder", np.int32),  # features.Encoder.ident of the planes the leaves get
        ("sym_buf", np.uint8, (SYM_BUF,)),
        ("root_node", np.int32),
        ("used", np.int32),
        ("max_moves", np.int32),
        ("leaf_key", np.uint64, (MAX_LEAVES,)),  # cache key of each waiting leaf
        ("leaf_moves", np.int16, (MAX_LEAVES, MAX_ACTIONS)),  # its children to be (collect_moves)
        ("leaf_nmoves", np.int32, (MAX_LEAVES,)),
        ("terminal_value", np.float64),
    ],
    align=True,
)


def new_workspace() -> np.ndarray:
    return np.zeros(1, dtype=WS_DTYPE)


def new_nodes(capacity: int) -> np.ndarray:
    return np.zeros(capacity, dtype=NODE_DTYPE)


@njit(cache=True)
def build_game_table(ws, hashes) -> None:
    """Fill the workspace's set of earlier positions from ``hashes``. The
    set uses the smallest power-of-two part of ``game_table`` at least twice
    the positions (64 slots at least): a probe in a small table stays in the
    CPU cache, and every move a descent plays probes it."""
    w = ws[0]
    table = w.game_table
    n = min(hashes.shape[0], MAX_GAME_POSITIONS)
    size = 64
    while size < 2 * n and size < table.shape[0]:
        size *= 2
    mask = size - 1
    for i in range(size):
        table[i] = 0
    for i in range(hashes.shape[0] - n, hashes.shape[0]):
        key = hashes[i] ^ TABLE_SALT
        j = np.int64(key & np.uint64(mask))
        while table[j] != 0 and table[j] != key:
            j = (j + 1) & mask
        table[j] = key
    w.n_game_hash = n
    w.game_mask = mask


@njit(cache=True)
def in_game_table(w, h) -> bool:
    table = w.game_table
    mask = w.game_mask
    key = h ^ TABLE_SALT
    j = np.int64(key & np.uint64(mask))
    while table[j] != 0:
        if table[j] == key:
            return True
        j = (j + 1) & mask
    return False


@njit(cache=True)
def tree_reset(ws, nodes) -> None:
    """Drop the whole tree: one fresh, unexpanded root at node 0."""
    w = ws[0]
    w.root_node = 0
    w.used = 1
    r = nodes[0]
    r.visits = 0
    r.nchild = 0
    r.action = -1
    r.first = -1
    r.ordered = 0
    r.state = 0
    r.prior = 1.0
    r.wsum = 0.0


@njit(cache=True)
def set_root(ws, nodes, arr, hashes, max_moves: int, keep: bool, room: int) -> None:
    """Make the game record ``arr[0]`` (with position history ``hashes``)
    the root position. The tree is kept when ``keep`` (already this
    position's) and the pool has ``room`` free nodes (what the next search
    may add); else it starts afresh. The pool only grows until a fresh
    start, so a kept tree also holds the discarded siblings' nodes."""
    w = ws[0]
    if not keep or w.used + room > nodes.shape[0]:
        tree_reset(ws, nodes)
    B.copy_board(w.root, arr[0])
    build_game_table(ws, hashes)
    w.max_moves = max_moves


@njit(cache=True)
def collect_moves(ws, leaf_slot: int) -> int:
    """List the scratch board's simple-legal actions (pass last) in
    ``ws.leaf_moves[leaf_slot]``: the children the leaf gets when its
    priors arrive. Returns how many."""
    w = ws[0]
    k = B.list_legal_actions(w.scratch, w.leaf_moves[leaf_slot])
    w.leaf_nmoves[leaf_slot] = k
    return k


@njit(cache=True)
def expand(ws, nodes, node: int, leaf_slot: int, policy, row: int, sym: int) -> int:
    """Give the pending ``node`` its children: one per action listed for
    ``leaf_slot`` (``collect_moves``), with priors from ``policy[row]`` (a
    policy over the board as transformed by symmetry ``sym``) renormalised
    over them. The children are written once, here, in one pass: a search
    touches each new node's memory only when its prior is known. The node
    stops being pending; it stays a leaf when the pool is full. Returns the
    number of children."""
    w = ws[0]
    nd = nodes[node]
    nd.state = 0
    nd.ordered = 0
    moves = w.leaf_moves[leaf_slot]
    k = w.leaf_nmoves[leaf_slot]
    first = w.used
    if first + k > nodes.shape[0]:
        return 0
    pol = policy[row]
    smap = w.sym_map[sym]
    total = 0.0
    for i in range(k):
        total += pol[smap[moves[i]]]
    inv = 1.0 / total if total > 0.0 else 0.0
    uniform = 1.0 / k
    for i in range(k):
        c = nodes[first + i]
        a = moves[i]
        c.visits = 0
        c.first = -1
        c.nchild = 0
        c.action = a
        c.ordered = 0
        c.state = 0
        c.prior = pol[smap[a]] * inv if total > 0.0 else uniform
        c.wsum = 0.0
    nd.first = first
    nd.nchild = k
    w.used = first + k
    return k


@njit(cache=True)
def transform_planes(ws, planes, slot: int, sym: int, n: int) -> None:
    """Apply symmetry ``sym`` to ``planes[slot]`` (``[C, N, N]``) in place."""
    w = ws[0]
    buf = w.sym_buf
    smap = w.sym_map[sym]
    out = planes[slot]
    c_count = out.shape[0]
    nn = n * n
    for c in range(c_count):
        pc = out[c]
        base = c * nn
        for y in range(n):
            for x in range(n):
                buf[base + y * n + x] = pc[y, x]
    for c in range(c_count):
        pc = out[c]
        base = c * nn
        for a in range(nn):
            t = smap[a]
            pc[t // n, t % n] = buf[base + a]


@njit(cache=True)
def backup(ws, nodes, leaf_slot: int, value: float, virtual: bool) -> None:
    """Back ``value`` (for the side to move at the leaf) up the path of
    ``leaf_slot``. ``virtual``: the path carries a virtual loss to replace."""
    w = ws[0]
    v = -value  # the player who moved into the leaf sees the opposite
    add = 0 if virtual else 1
    fix = 1.0 if virtual else 0.0
    path = w.paths[leaf_slot]
    for i in range(w.depths[leaf_slot], -1, -1):
        nd = nodes[path[i]]
        nd.visits += add
        nd.wsum += v + fix
        v = -v


@njit(cache=True)
def add_virtual_loss(ws, nodes, leaf_slot: int) -> None:
    w = ws[0]
    path = w.paths[leaf_slot]
    for i in range(w.depths[leaf_slot] + 1):
        nd = nodes[path[i]]
        nd.visits += 1
        nd.wsum -= 1.0


@njit(cache=True)
def finish(ws, nodes, leaf_slot: int, policy, wdl, row: int) -> None:
    """Finish the playout waiting in ``leaf_slot`` with the network's answer
    ``policy[row]``, ``wdl[row]``: priors for the leaf, then the backup of
    ``win - loss`` in place of the virtual loss."""
    w = ws[0]
    leaf = w.paths[leaf_slot, w.depths[leaf_slot]]
    if nodes[leaf].state == PENDING:
        expand(ws, nodes, leaf, leaf_slot, policy, row, w.leaf_sym[leaf_slot])
    backup(ws, nodes, leaf_slot, wdl[row, 0] - wdl[row, 2], True)


@njit(cache=True)
def root_stats(ws, nodes, visits, q, prior) -> int:
    """Write per-action visits, Q (root player's view; 0 unvisited) and prior
    of the root's children into ``[A]`` arrays; actions without a child get
    visits 0 and prior 0. Returns the number of children."""
    w = ws[0]
    root = nodes[w.root_node]
    for a in range(visits.shape[0]):
        visits[a] = 0
        q[a] = 0.0
        prior[a] = 0.0
    for i in range(root.first, root.first + root.nchild):
        c = nodes[i]
        a = c.action
        visits[a] = c.visits
        prior[a] = c.prior
        if c.visits > 0:
            q[a] = c.wsum / c.visits
    return root.nchild


@njit(cache=True)
def root_summary(ws, nodes):
    """``(children, visits, value)`` of the root: its number of children, its
    visits and its value for the side to move in [-1, 1] (0 unvisited)."""
    w = ws[0]
    r = nodes[w.root_node]
    value = -r.wsum / r.visits if r.visits > 0 else 0.0
    return r.nchild, r.visits, value


@njit(cache=True)
def choose_by_visits(visits, prior, temperature: float, u: float, policy) -> int:
    """The move of a search from the root's ``[A]`` visits and priors:
    restricted root moves (prior < 0) lose their visits first (in place),
    ``policy`` gets the visit distribution (float32, zero when there is no
    visit), and the answer is the most visited action (ties broken by the
    uniform draw ``u`` in [0, 1)) or, with ``temperature`` > 0, an action
    drawn with weight visits^(1/temperature) by ``u``. No visit at all:
    pass (the last action)."""
    a_count = visits.shape[0]
    total = 0
    best = 0
    ties = 0
    for a in range(a_count):
        if prior[a] < 0.0:
            visits[a] = 0
        v = visits[a]
        total += v
        if v > best:
            best = v
            ties = 1
        elif v == best and v > 0:
            ties += 1
    inv = 1.0 / total if total > 0 else 0.0
    for a in range(a_count):
        policy[a] = visits[a] * inv
    if total == 0:
        return a_count - 1
    if temperature > 0.0:
        e = 1.0 / temperature
        weight = 0.0
        for a in range(a_count):
            if visits[a] > 0:
                weight += (visits[a] / best) ** e  # scaled by the largest: no overflow
        r = u * weight
        last = -1
        for a in range(a_count):
            if visits[a] > 0:
                last = a
                r -= (visits[a] / best) ** e
                if r < 0.0:
                    return a
        return last
    k = min(int(u * ties), ties - 1)
    for a in range(a_count):
        if visits[a] == best:
            if k == 0:
                return a
            k -= 1
    return a_count - 1


@njit(cache=True)
def ban_root_actions(ws, nodes, actions) -> bool:
    """Give the root children for ``actions`` prior -1 (never searched, not
    a choice). Refused (False, nothing changed) when that would leave no
    open child."""
    w = ws[0]
    root = nodes[w.root_node]
    first = root.first
    end = first + root.nchild
    left = 0
    for i in range(first, end):
        if nodes[i].prior < 0.0:
            continue
        banned = False
        for j in range(actions.shape[0]):
            if nodes[i].action == actions[j]:
                banned = True
                break
        if not banned:
            left += 1
    if left == 0:
        return False
    for i in range(first, end):
        for j in range(actions.shape[0]):
            if nodes[i].action == actions[j]:
                nodes[i].prior = -1.0
                break
    root.ordered = 0
    return True


@njit(cache=True)
def root_choices(ws, nodes) -> int:
    """Root children still open to search (prior >= 0: not restricted, not
    found to repeat a position)."""
    w = ws[0]
    root = nodes[w.root_node]
    k = 0
    for i in range(root.first, root.first + root.nchild):
        if nodes[i].prior >= 0.0:
            k += 1
    return k


@njit(cache=True)
def mix_root_noise(ws, nodes, gammas, eps: float) -> None:
    """Dirichlet noise at the root: ``gammas[j]`` ~ Gamma(alpha) for the j-th
    open root child (``root_choices`` of them), normalised into a Dirichlet
    draw and mixed in with weight ``eps``. The root's children are reordered
    lazily afterwards (their priors changed)."""
    w = ws[0]
    root = nodes[w.root_node]
    total = 0.0
    for j in range(gammas.shape[0]):
        total += gammas[j]
    if total <= 0.0:
        return  # every draw underflowed: no noise this time
    j = 0
    for i in range(root.first, root.first + root.nchild):
        if nodes[i].prior >= 0.0 and j < gammas.shape[0]:
            nodes[i].prior = (1.0 - eps) * nodes[i].prior + eps * gammas[j] / total
            j += 1
    root.ordered = 0


@njit(cache=True)
def advance(ws, nodes, action: int) -> bool:
    """Make the root's child for ``action`` the new root (tree reuse).
    Returns False (and resets the tree) when that child is not expanded."""
    w = ws[0]
    root = nodes[w.root_node]
    for i in range(root.first, root.first + root.nchild):
        if nodes[i].action == action:
            if nodes[i].nchild > 0:
                w.root_node = i
                return True
            break
    tree_reset(ws, nodes)
    return False


@njit(cache=True)
def child_index(ws, nodes, action: int) -> int:
    """Node index of the root's child for ``action``; -1 when none."""
    w = ws[0]
    root = nodes[w.root_node]
    for i in range(root.first, root.first + root.nchild):
        if nodes[i].action == action:
            return i
    return -1


@njit(cache=True)
def principal_variation(ws, nodes, start: int, out) -> int:
    """Follow the most visited child from node ``start``; writes actions into
    ``out`` and returns how many."""
    k = 0
    node = start
    while k < out.shape[0]:
        nd = nodes[node]
        if nd.nchild == 0:
            break
        best = -1
        bv = 0
        for i in range(nd.first, nd.first + nd.nchild):
            if nodes[i].visits > bv:
                bv = nodes[i].visits
                best = i
        if best < 0:
            break
        out[k] = nodes[best].action
        k += 1
        node = best
    return k
