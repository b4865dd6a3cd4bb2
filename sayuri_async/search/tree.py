"""The search tree and a game's search workspace, as flat numpy records.

Vocabulary
----------
edges       ``[edge capacity]`` records of EDGE_DTYPE: one per child of an
            expanded node (its action, its prior, and ``child``: the index of
            its node record, -1 until a descent first goes into it). A node's
            edges are contiguous, ``first .. first + nchild``, written in one
            pass when the node's network answer arrives (``expand``); they
            are laid out so that the visited children always form a prefix:
            PUCT only ever gives a first visit to the unvisited edge of
            highest prior, which ``puct.select_child`` swaps to the front of
            the unvisited part on demand (``ordered`` counts the front edges
            known to be in that order; -1 means "no order", as at a Gumbel
            root, and makes selection scan every edge). An edge whose move
            repeats an earlier position (superko), or that the caller ruled
            out at the root (``Search.restrict_root``), gets prior -1:
            selection skips it.
partial     with ``P_EDGES_PER_EXPANSION`` > 0 a node other than the root
            gets edges only for that many moves of highest prior, already in
            selection order, and then a *tail edge* (action TAIL, child -1)
            whose prior is that of the best move left out. Selection treats
            it as the next unvisited child, which is what full edges would
            show it; when it wins, the descent asks the network about the
            node again and ``widen`` writes a new block with twice the edges
            (all of them at the root); that playout backs up nothing. A node
            has every move when its last edge is not a tail edge.
nodes       ``[node records]`` records of NODE_DTYPE: one per position a
            descent went into (the root, then each child on its first visit;
            ``new_node``), so most edges never get one. ``wsum`` is the sum
            of values backed up through the node, from the point of view of
            the player who made the move into it, so ``wsum / visits`` is
            that player's Q for choosing this child. A node with a record has
            at least one visit (real or virtual).
capacities  ``pools.py`` sizes the pools, grows them under a memory budget
            and compacts or prunes them there; else they only fill until the
            tree starts afresh (``tree_reset``). ``ws.edges_used`` and
            ``ws.nodes_used`` count what is taken. A full edge pool leaves a new leaf unexpanded (the
            next descent that reaches it asks the network again); a full node
            pool ends a descent at the expanded node it reached, which is
            evaluated again (its edges stay as they are). Neither stops a
            search; ``set_root`` starts afresh when either pool lacks the
            room of the next search.
workspace   ``[1]`` record of WS_DTYPE per game: the root position, the
            game's position
            hashes (superko; a hash set, so a check costs the same at move 300
            as at move 3), the paths of the leaves waiting on the network
            (``paths[i, :depths[i] + 1]``: node indices, leaf last), the
            search parameters and the tree's bookkeeping (root node, pool
            use). The encoder's working memory is not in it: the search
            keeps the encoder's own scratch array beside it
            (``encoders/leaf.py``), so a ``simple-v1`` game's workspace
            stays small.
leaf boards ``[k]`` records of BOARD_DTYPE per game (``new_leaf_boards``):
            ``leaf_rec(boards, i)`` is the board the walk to waiting leaf
            ``i`` replayed from the root, kept until that leaf is encoded.
            One per leaf slot where the leaves are encoded after the round
            (``ws.encode_off_loop``), else one for all: each board a walk
            writes is 12.5 KB more for the processor's caches to hold.
pending     a leaf's legal moves are listed in the workspace when it is
            encoded (``collect_moves``, from its leaf board); until the network
            answers it is PENDING and another descent that meets it stops (a
            collision). The answer gives it its edges, priors included, in
            one pass (``expand``).
virtual loss  every node on a waiting leaf's path counts one more visit and
            one more loss for the player who moved into it, so the next
            descents of the same search spread out; ``finish`` replaces it
            with the real value.
symmetry    with random symmetry on, each leaf is shown to the network in one
            of the 8 board symmetries (``symmetry.py``), drawn per request;
            its policy is read back through ``sym_map``.
value       in ``[-1, 1]`` for the side to move at a node (win minus loss);
            winrate = (value + 1) / 2 (``value.py``).
params      float64 vector indexed by the P_* constants (PUCT and FPU).
idle points the side to move's empty points inside its own pass-alive
            area with no opponent stone (``encoders/benson.py``): no move
            there can gain anything, and the search never plays one (pass
            stays). The root's children never include one (``set_root``
            closes kept edges there; its first expansion leaves them out);
            below the root they are left out when the leaf's encoder found
            them anyway (``sayuri-v3`` computes safe areas for its planes),
            which is Sayuri's own rule; with ``simple-v1`` a Benson pass per
            leaf would cost more than the rest of the leaf, so there only
            the root is kept clean.

The compiled functions here are shared by PUCT and Gumbel search: allocation,
expansion from a policy row, backup and the pools' reset; ``root.py`` holds
what reads or changes the root's children (statistics, restrictions, noise,
tree reuse).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..encoders.benson import pass_alive_idle
from ..go import board as B
from .superko import TABLE_SLOTS, fill_position_set

MAX_DEPTH = 512
MAX_LEAVES = 16  # leaves one search may have waiting on the network at once
MAX_ACTIONS = B.MAX_N * B.MAX_N + 1
SYM_BUF = 64 * B.MAX_N * B.MAX_N  # planes x points of the largest encoder and board
PENDING = 1  # node state: waiting on the network for its edges
TAIL = -1  # the action of a tail edge (see "partial")

NODE_DTYPE = np.dtype(  # 24 bytes
    [
        ("visits", np.int32),
        ("first", np.int32),  # first edge
        ("nchild", np.int16),  # edges
        ("ordered", np.int16),
        ("state", np.int8),
        ("wsum", np.float64),
    ],
    align=True,
)

EDGE_DTYPE = np.dtype(  # 12 bytes
    [
        ("action", np.int16),
        ("prior", np.float32),
        ("child", np.int32),  # node record, -1 before the first visit
    ],
    align=True,
)

# ws.params: the search settings the compiled code reads (SearchConfig.params)
P_C_INIT, P_C_BASE, P_FPU_REDUCTION, P_FPU_ROOT = 0, 1, 2, 3  # PUCT and first-play urgency
P_RANDOM_SYMMETRY = 4  # > 0: each leaf is shown in a random symmetry
P_EDGES_PER_EXPANSION = 5  # edges a non-root expansion writes (0: one per legal move)
N_PARAMS = 6

WS_DTYPE = np.dtype(
    [
        ("root", B.BOARD_DTYPE),
        ("game_table", np.uint64, (TABLE_SLOTS,)),  # the game's positions (superko.py's position set)
        ("paths", np.int32, (MAX_LEAVES, MAX_DEPTH)),
        ("path_hash", np.uint64, (MAX_DEPTH,)),
        ("params", np.float64, (N_PARAMS,)),
        ("game_mask", np.int32),  # the position set's mask: game_table slots in use - 1
        ("depths", np.int32, (MAX_LEAVES,)),
        ("leaf_sym", np.int32, (MAX_LEAVES,)),  # symmetry the leaf was shown to the network in
        ("sym_map", np.int16, (8, MAX_ACTIONS)),  # sym_map[k, a]: where action a goes under symmetry k
        ("sym_n", np.int32),  # board size sym_map is for
        ("encoder", np.int32),  # encoders.Encoder.ident of the planes the leaves get
        ("encode_off_loop", np.int8),  # 1: encode_rounds encodes the leaves (Encoder.off_loop); 0: descend_round
        ("sym_buf", np.uint8, (SYM_BUF,)),
        ("root_node", np.int32),
        ("nodes_used", np.int32),
        ("edges_used", np.int32),
        ("max_moves", np.int32),
        ("leaf_key", np.uint64, (MAX_LEAVES,)),  # cache key of each waiting leaf
        ("leaf_moves", np.int16, (MAX_LEAVES, MAX_ACTIONS)),  # its children to be (collect_moves)
        ("leaf_nmoves", np.int32, (MAX_LEAVES,)),
        ("leaf_widen", np.int8, (MAX_LEAVES,)),  # 1: the leaf is an expanded node that gets more edges
        ("leaf_collect", np.int8, (MAX_LEAVES,)),  # 1: its moves are to be listed when it is encoded
        ("prior_buf", np.float32, (MAX_ACTIONS,)),  # the expanding leaf's priors, in leaf_moves order
        ("action_mark", np.uint8, (MAX_ACTIONS,)),  # scratch: actions that have an edge already (widen)
        ("leaf_idle", np.uint8, (MAX_ACTIONS,)),  # the leaf's idle points (see "idle points"); pass never
        ("root_serial", np.int64),  # set_root calls: the root the encoder's scratch made its read-outs for
    ],
    align=True,
)


def new_workspace() -> np.ndarray:
    return np.zeros(1, dtype=WS_DTYPE)


def new_nodes(capacity: int) -> np.ndarray:
    return np.zeros(capacity, dtype=NODE_DTYPE)


def new_edges(capacity: int) -> np.ndarray:
    return np.zeros(capacity, dtype=EDGE_DTYPE)


@njit(cache=True)
def clear_node(nd) -> None:
    nd.visits = 0
    nd.first = -1
    nd.nchild = 0
    nd.ordered = 0
    nd.state = 0
    nd.wsum = 0.0


@njit(cache=True)
def tree_reset(ws, nodes) -> None:
    """Drop the whole tree: one fresh, unexpanded root at node 0, no edges."""
    w = ws[0]
    w.root_node = 0
    w.nodes_used = 1
    w.edges_used = 0
    clear_node(nodes[0])


@njit(cache=True)
def new_node(ws, nodes) -> int:
    """A fresh node record (no visits, no edges); -1 when the pool is full."""
    w = ws[0]
    i = w.nodes_used
    if i >= nodes.shape[0]:
        return -1
    clear_node(nodes[i])
    w.nodes_used = i + 1
    return i


@njit(cache=True)
def set_root(ws, nodes, edges, arr, hashes, max_moves: int, keep: bool, edge_room: int, node_room: int) -> None:
    """Make the game record ``arr[0]`` (with position history ``hashes``)
    the root position. The tree is kept when ``keep`` (already this
    position's) and the pools have ``edge_room`` free edges and
    ``node_room`` free node records (what the next search may add); else it
    starts afresh. The pools only grow until a fresh start, so a kept tree
    also holds the discarded siblings' records."""
    w = ws[0]
    if not keep or w.edges_used + edge_room > edges.shape[0] or w.nodes_used + node_room > nodes.shape[0]:
        tree_reset(ws, nodes)
    B.copy_board(w.root, arr[0])
    w.game_mask = fill_position_set(w.game_table, hashes)
    w.max_moves = max_moves
    w.root_serial += 1  # an encoder's read-outs of the root are made at its first leaf (encoders/leaf.py)
    close_idle_root_edges(ws, nodes, edges)


@njit(cache=True)
def close_idle_root_edges(ws, nodes, edges) -> int:
    """Give the root's edges at its idle points prior -1 (a kept tree may
    have them: its positions were expanded below an earlier root). Returns
    how many were closed."""
    w = ws[0]
    root = nodes[w.root_node]
    if root.nchild == 0:
        return 0
    rec = w.root
    nn = rec.n * rec.n
    idle = w.leaf_idle
    if pass_alive_idle(rec, rec.to_move, idle) == 0:
        return 0
    return close_root_edges_at(nodes, edges, w.root_node, idle, nn)


@njit(cache=True)
def close_root_edges_at(nodes, edges, root_node, points, nn) -> int:
    """Give the edges of node ``root_node`` whose move is one of the first
    ``nn`` entries of ``points`` marked nonzero prior -1 (closed: selection
    skips them), and drop its selection order if it closed any. Pass is
    never closed. Returns how many it closed."""
    root = nodes[root_node]
    closed = 0
    for i in range(root.first, root.first + root.nchild):
        a = edges[i].action
        if 0 <= a < nn and points[a] and edges[i].prior >= 0.0:
            edges[i].prior = -1.0
            closed += 1
    if closed and root.ordered > 0:
        root.ordered = 0
    return closed


def new_leaf_boards(count: int) -> np.ndarray:
    return np.zeros(count, dtype=B.BOARD_DTYPE)


@njit(cache=True)
def leaf_rec(boards, leaf_slot: int):
    """The board of the leaf in ``leaf_slot`` (see "leaf boards")."""
    return boards[min(leaf_slot, boards.shape[0] - 1)]


@njit(cache=True)
def collect_moves(ws, rec, leaf_slot: int, skip_idle: bool) -> int:
    """List the simple-legal actions (pass last) of ``rec``, the board of
    the leaf in ``leaf_slot``, in ``ws.leaf_moves[leaf_slot]``: the
    children the leaf gets when its priors arrive; with ``skip_idle`` none
    of ``ws.leaf_idle``'s points. Returns how many."""
    w = ws[0]
    moves = w.leaf_moves[leaf_slot]
    k = B.list_legal_actions(rec, moves)
    if skip_idle:
        idle = w.leaf_idle
        nn = rec.n * rec.n
        j = 0
        for i in range(k):
            a = moves[i]
            if a >= nn or not idle[a]:
                moves[j] = a
                j += 1
        k = j
    w.leaf_nmoves[leaf_slot] = k
    return k


@njit(cache=True)
def leaf_priors(w, k: int, moves, policy, row: int, sym: int) -> None:
    """The priors of the ``k`` actions ``moves`` into ``w.prior_buf``: from
    ``policy[row]`` (a policy over the board as transformed by symmetry
    ``sym``), renormalised over them (uniform when they sum to 0)."""
    pol = policy[row]
    smap = w.sym_map[sym]
    buf = w.prior_buf
    total = 0.0
    for i in range(k):
        total += pol[smap[moves[i]]]
    inv = 1.0 / total if total > 0.0 else 0.0
    uniform = 1.0 / k
    for i in range(k):
        buf[i] = pol[smap[moves[i]]] * inv if total > 0.0 else uniform


@njit(cache=True)
def select_step(moves, buf, i: int, k: int) -> None:
    """One step of the selection sort that ``puct.select_child`` does lazily
    on a node's edges: the first action of highest prior among positions
    ``i .. k - 1`` swaps into position ``i`` (ties: the earlier one stays).
    Running it here for the positions an expansion writes gives them the
    order full edges would take, ties included."""
    m = i
    for j in range(i + 1, k):
        if buf[j] > buf[m]:
            m = j
    if m != i:
        a, p = moves[i], buf[i]
        moves[i], buf[i] = moves[m], buf[m]
        moves[m], buf[m] = a, p


@njit(cache=True)
def write_edge(e, action: int, prior: float) -> None:
    e.action = action
    e.prior = prior
    e.child = -1


@njit(cache=True)
def expand(ws, nodes, edges, node: int, leaf_slot: int, policy, row: int, sym: int, is_root: bool) -> int:
    """Give the pending ``node`` its edges from ``policy[row]`` (see
    ``leaf_priors``) over the actions listed for ``leaf_slot``
    (``collect_moves``). A root, or any node when ``P_EDGES_PER_EXPANSION``
    is 0 or at least the legal moves, gets one edge per legal move, in list
    order (selection orders them lazily); otherwise the node gets edges for
    that many moves of highest prior, already in selection order, and a
    tail edge with the prior of the next one (``widen`` adds more when
    selection reaches it). The edges are written once, here, in one pass:
    a search touches each new edge's memory only when its prior is known.
    The node stops being pending; it stays a leaf when the edge pool lacks
    the room, and a node that has edges already (evaluated again: see
    ``capacities``) keeps them. Returns the number of edges written."""
    w = ws[0]
    nd = nodes[node]
    nd.state = 0
    if w.leaf_widen[leaf_slot]:
        return widen(ws, nodes, edges, node, leaf_slot, policy, row, sym, is_root)
    if nd.nchild > 0:
        return 0
    moves = w.leaf_moves[leaf_slot]
    k = w.leaf_nmoves[leaf_slot]
    limit = int(w.params[P_EDGES_PER_EXPANSION])
    partial = not is_root and 0 < limit < k
    write = limit + 1 if partial else k
    first = w.edges_used
    if first + write > edges.shape[0]:
        return 0
    if partial:
        leaf_priors(w, k, moves, policy, row, sym)
        buf = w.prior_buf
        for i in range(write):  # the written moves and the first one left out
            select_step(moves, buf, i, k)
        for i in range(limit):
            write_edge(edges[first + i], moves[i], buf[i])
        write_edge(edges[first + limit], TAIL, buf[limit])
        nd.ordered = write
    else:  # every move, priors straight into the edges: one pass (self-play's hot path)
        pol = policy[row]
        smap = w.sym_map[sym]
        total = 0.0
        for i in range(k):
            total += pol[smap[moves[i]]]
        inv = 1.0 / total if total > 0.0 else 0.0
        uniform = 1.0 / k
        for i in range(k):
            a = moves[i]
            write_edge(edges[first + i], a, pol[smap[a]] * inv if total > 0.0 else uniform)
        nd.ordered = 0
    nd.first = first
    nd.nchild = write
    w.edges_used = first + write
    return write


@njit(cache=True)
def widen(ws, nodes, edges, node: int, leaf_slot: int, policy, row: int, sym: int, is_root: bool) -> int:
    """More edges for the partly expanded ``node`` (its last edge a tail
    edge), whose listed actions and fresh network answer are those of
    ``expand``: a new block that starts with its present edges (children,
    closed edges and all) followed by the next moves in selection order that
    have none, up to twice as many in all (every legal move at the root),
    and a tail edge when moves are still left out. The old block is left
    behind (a compaction reclaims it, ``pools.py``). With the same priors as
    the first answer the new edges are exactly those full edges would have
    shown selection next. Returns the edges added; 0 when the pool lacks the
    room (a fixed pool: the node drops its tail edge and keeps the children
    it has)."""
    w = ws[0]
    nd = nodes[node]
    moves = w.leaf_moves[leaf_slot]
    k = w.leaf_nmoves[leaf_slot]
    src = nd.first
    old = nd.nchild - 1  # the edges of moves; the last is the tail edge
    target = k if is_root else min(k, max(2 * old, int(w.params[P_EDGES_PER_EXPANSION])))
    first = w.edges_used
    if target <= old or first + target + 1 > edges.shape[0]:
        nd.nchild = old
        return 0
    leaf_priors(w, k, moves, policy, row, sym)
    buf = w.prior_buf
    mark = w.action_mark
    for j in range(old):
        e = edges[src + j]
        d = edges[first + j]
        d.action, d.prior, d.child = e.action, e.prior, e.child
        mark[e.action] = 1
    n = old
    for i in range(k):
        if not is_root:
            select_step(moves, buf, i, k)
        a = moves[i]
        if mark[a]:
            continue
        if n == target:
            write_edge(edges[first + n], TAIL, buf[i])
            n += 1
            break
        write_edge(edges[first + n], a, buf[i])
        n += 1
    for j in range(old):
        mark[edges[first + j].action] = 0
    nd.first = first
    nd.nchild = n
    # visited children stay a prefix; the root's new edges are in list order
    nd.ordered = 0 if is_root else n
    w.edges_used = first + n
    return n - old


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
def remove_virtual_loss(ws, nodes, leaf_slot: int) -> None:
    w = ws[0]
    path = w.paths[leaf_slot]
    for i in range(w.depths[leaf_slot] + 1):
        nd = nodes[path[i]]
        nd.visits -= 1
        nd.wsum += 1.0


@njit(cache=True)
def finish(ws, nodes, edges, leaf_slot: int, policy, wdl, row: int) -> None:
    """Finish the playout waiting in ``leaf_slot`` with the network's answer
    ``policy[row]``, ``wdl[row]``: edges for the leaf, then the backup of
    ``win - loss`` in place of the virtual loss. A widening (``leaf_widen``)
    backs up nothing: the node gets its edges and loses the virtual loss,
    and the next descent through it goes on as it would have with every
    edge written (no visit is counted twice)."""
    w = ws[0]
    depth = w.depths[leaf_slot]
    leaf = w.paths[leaf_slot, depth]
    if nodes[leaf].state == PENDING:
        expand(ws, nodes, edges, leaf, leaf_slot, policy, row, w.leaf_sym[leaf_slot], depth == 0)
    if w.leaf_widen[leaf_slot]:
        w.leaf_widen[leaf_slot] = 0
        remove_virtual_loss(ws, nodes, leaf_slot)
        return
    backup(ws, nodes, leaf_slot, wdl[row, 0] - wdl[row, 2], True)
