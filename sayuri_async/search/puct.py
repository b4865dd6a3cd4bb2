"""PUCT selection and the compiled playout descent.

Vocabulary
----------
c(N)        exploration factor ``c_init + ln((N + c_base + 1) / c_base)``.
FPU         first-play urgency: an unvisited child's Q is the parent's Q minus
            ``fpu_reduction * sqrt(sum of priors of visited children)``
            (``fpu_root`` replaces the reduction at the root).
edge order  a node's edges keep its visited children (``child >= 0``) in
            front; ``select_child`` scores those and only the first unvisited
            edge, which it makes the unvisited one of highest prior by a swap
            of two 12-byte edges (``_swap``; a subtree stays where it is,
            its edge points to it).
walk        one playout's way down (``walk``): replay the root position on
            its leaf slot's board (``tree.leaf_rec``), choose edges by PUCT
            (or a forced root edge, used by Gumbel sequential halving),
            give a child its node record
            on its first visit, stop at an unexpanded node (a leaf for the
            network) or at the end of the game (scored at once and backed
            up: no network request). With the node pool full, an edge
            without a record ends the walk at the node above it, which is
            evaluated again. At a partly expanded node whose tail edge wins
            the selection (its best move has no edge yet) the walk stops
            there and asks the network about it again for more edges
            (``tree.widen``). An edge that is not a legal move where the
            walk stands (superko, or simple-illegal in a tree kept for
            another position) is closed (prior -1) and the walk starts
            again: each restart closes an edge for good, so a walk always
            ends.
holding a leaf  ``hold_leaf``: the walk's leaf marked pending, a virtual
            loss on its path, its symmetry drawn; its cache key returned.
            Its board stays in its leaf slot.
encoding a leaf  ``encode_waiting_leaf``: its planes written into a row of
            the batch, its moves collected (``tree.collect_moves``, without
            its idle points where the encoding found them). A round's
            leaves are encoded by ``encode_rounds`` (a whole batch's rounds
            in one call), which the evaluator runs when the batch leaves
            (the batcher: in its worker thread, just before the network
            runs), off the event loop; the search touches its workspace
            again only after the answers, so nothing else uses it
            meanwhile. That is for an encoder whose ``Encoder.off_loop``
            says so (``ws.encode_off_loop``: ``sayuri-v3``); a cheap one's
            leaves are encoded by ``descend_round`` itself, each right
            after its walk. A leaf found in the NN cache is encoded at once
            (its moves are needed to finish it).
cache key   ``infer/cache.cache_key``: two leaves with the same key get
            the same network output.
round       what one search does between two awaits: up to
            ``leaves_per_await`` walks in one compiled call
            (``descend_round``), whose leaves go to the batcher as one
            request of consecutive slots with their encoding to run
            (``encode_rounds``), then one compiled call
            (``finish_round``) that gives them the network's answers. Leaves
            found in the NN cache (``infer/cache.py``) and ends of the game
            are finished inside the round and cost no request.
handles     the round's arguments grouped as plain tuples (numba types a
            plain tuple of arrays as fast as separate arguments; a
            namedtuple costs about 2 us more per call to dispatch):
            ``tree = (ws, nodes, edges, boards, scratch)``
            (``Search.tree_handle``: the workspace, the pools and the leaf
            boards of ``tree.py``, and the encoder's scratch,
            ``encoders/leaf.py``),
            ``cache = NNCache.arrays`` (keys ``[S]``, policy ``[S, A]``,
            wdl ``[S, 3]``, score ``[S]``) and
            ``answers = (policy [B, A], wdl [B, 3], score [B])``, a batch's
            network outputs by slot. Both rounds borrow their arrays
            (``borrowed.py``): below them no view of the tree, the planes,
            the cache or the answers counts references.

Leaves are encoded with the encoder named by ``ws.encoder`` and its scratch
(``encoders.leaf.encode_leaf``), which leaves the side to move's idle points
(``tree.py``) out of a leaf's moves where the encoding found them.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..borrowed import borrowed, borrowed_at
from ..encoders.leaf import encode_leaf
from ..go import board as B
from ..go.scoring import area_outcome
from ..infer.cache import cache_key, cache_lookup, cache_store
from ..symmetry import permute_planes
from .superko import repeats_position
from .tree import (PENDING, P_C_BASE, P_C_INIT, P_FPU_REDUCTION, P_FPU_ROOT, P_RANDOM_SYMMETRY, TAIL,
                   add_virtual_loss, backup, collect_moves, finish, leaf_rec, new_node)

BOARD_BYTES = B.BOARD_DTYPE.itemsize  # a leaf board's size: the stride of a search's leaf boards
WALK_LEAF = 0  # walk's outcome: a leaf for the network (or a node to widen)
WALK_END = 1  # walk's outcome: the playout ended the game
WALK_COLLISION = 2  # walk's outcome: it met a leaf already waiting on the network


@njit(cache=True)
def _swap(edges, i: int, j: int) -> None:
    """Exchange two sibling edges (their subtrees stay: edges point down)."""
    a = edges[i]
    b = edges[j]
    action, prior, child = a.action, a.prior, a.child
    a.action, a.prior, a.child = b.action, b.prior, b.child
    b.action, b.prior, b.child = action, prior, child


@njit(cache=True)
def select_child(nodes, edges, node: int, params, is_root: bool) -> int:
    """The PUCT choice (an edge index) among ``node``'s edges (skipping
    superko ones); -1 when none is open.

    Unvisited children share the FPU value, so only the one of highest prior
    can win among them; visited children form a prefix (see ``tree.py``), so
    the loop stops at the first unvisited edge instead of touching all of
    them. A node with ``ordered < 0`` (a Gumbel root) is scanned in full.
    A partly expanded node's tail edge (``tree.py``, "partial") comes after
    its other edges and has the prior of the best move left out, so it is
    scored as full edges would score that move, and only once every written
    move is visited; the walk widens the node when it wins."""
    nd = nodes[node]
    first = nd.first
    end = first + nd.nchild
    parent_visits = nd.visits
    c = params[P_C_INIT] + math.log((parent_visits + params[P_C_BASE] + 1.0) / params[P_C_BASE])
    sqrt_n = math.sqrt(max(parent_visits, 1))
    # parent's Q for its side to move (the opposite of the mover into it)
    parent_q = -nd.wsum / nd.visits if nd.visits > 0 else 0.0
    full = nd.ordered < 0
    visited_prior = 0.0
    best = -1
    best_score = -1e30
    p = -1
    for i in range(first, end):
        e = edges[i]
        if e.prior < 0.0:
            continue
        if e.child < 0:
            if full:
                if p < 0 or e.prior > edges[p].prior:
                    p = i
                continue
            p = i
            break
        ch = nodes[e.child]
        visited_prior += e.prior
        s = ch.wsum / ch.visits + c * e.prior * sqrt_n / (1.0 + ch.visits)
        if s > best_score:
            best_score = s
            best = i
    if p >= 0:
        if not full and p - first >= nd.ordered:
            m = p
            for j in range(p + 1, end):
                if edges[j].prior > edges[m].prior:
                    m = j
            if m != p:
                _swap(edges, m, p)
            nodes[node].ordered = p - first + 1
        red = params[P_FPU_ROOT] if is_root else params[P_FPU_REDUCTION]
        fpu = parent_q - red * math.sqrt(visited_prior)
        s = fpu + c * edges[p].prior * sqrt_n
        if s > best_score:
            best = p
    return best


@njit(cache=True)
def walk(ws, nodes, edges, boards, forced: int, leaf_slot: int) -> int:
    """One playout's way down from the root, on the board of the leaf in
    ``leaf_slot`` (``tree.leaf_rec(boards, leaf_slot)``). ``forced``
    >= 0 is the root child to take (its place among the root's edges). The
    path (node records) is kept in ``ws.paths[leaf_slot]``, its length in
    ``ws.depths[leaf_slot]``. Returns WALK_COLLISION when it met a pending
    leaf (nothing changed), WALK_END when the playout ended the game (the
    end position is on that board), else WALK_LEAF: the path ends at
    a node for the network, to expand or, with ``ws.leaf_widen`` set, to
    widen (selection chose a move it has no edge for, or it is a root with
    only some edges: a kept child)."""
    w = ws[0]
    path = w.paths[leaf_slot]
    while True:
        rec = leaf_rec(boards, leaf_slot)
        B.copy_board(rec, w.root)
        node = w.root_node
        depth = 0
        path[0] = node
        if nodes[node].state == PENDING:
            return WALK_COLLISION
        restart = False
        terminal = False
        r = nodes[node]
        widen = r.nchild > 0 and edges[r.first + r.nchild - 1].action == TAIL  # a kept child: every edge first
        while not widen and nodes[node].nchild > 0 and depth < path.shape[0] - 1:
            if depth == 0 and forced >= 0:
                e = nodes[node].first + forced
            else:
                e = select_child(nodes, edges, node, w.params, depth == 0)
            if e < 0:
                break
            if edges[e].action == TAIL:
                widen = True
                break
            child = edges[e].child
            if child < 0 and w.nodes_used >= nodes.shape[0]:
                break  # no record for a first visit: evaluate this node again
            p = B.action_to_point(rec.n, edges[e].action)
            if not B.is_simple_legal(rec, p):
                # not a move here (a tree kept for another position): never
                # again. B.play on an occupied point would break a group's
                # ring of stones and the next capture would walk it forever.
                edges[e].prior = -1.0
                restart = True
                break
            B.play(rec, p)
            h = rec.hash
            if p != B.PASS and repeats_position(w.game_table, w.game_mask, w.path_hash, h, depth):
                # superko: this child can never be played; choose again
                edges[e].prior = -1.0
                restart = True
                break
            if child < 0:
                child = new_node(ws, nodes)
                edges[e].child = child
            depth += 1
            path[depth] = child
            w.path_hash[depth] = h
            node = child
            if nodes[node].state == PENDING:
                return WALK_COLLISION
            if rec.passes >= 2 or rec.move_num >= w.max_moves:
                terminal = True
                break
        if restart:
            if forced >= 0:
                forced = -1
            continue
        w.depths[leaf_slot] = depth
        if terminal:
            return WALK_END
        w.leaf_widen[leaf_slot] = 1 if widen else 0
        return WALK_LEAF


@njit(cache=True)
def hold_leaf(ws, nodes, rec, leaf_slot: int) -> np.uint64:
    """Make the leaf that ``walk`` reached in ``leaf_slot`` (its board
    ``rec``) wait on the network: mark it PENDING, put a virtual loss on
    its path, note whether its moves are to be collected (a node to
    expand or widen) and draw its symmetry (``random_symmetry``). Returns its (odd) cache key, symmetry
    included; ``encode_waiting_leaf`` encodes it, ``tree.finish``
    completes the playout."""
    w = ws[0]
    depth = w.depths[leaf_slot]
    node = w.paths[leaf_slot, depth]
    nodes[node].state = PENDING
    add_virtual_loss(ws, nodes, leaf_slot)
    w.leaf_collect[leaf_slot] = 1 if nodes[node].nchild == 0 or w.leaf_widen[leaf_slot] else 0
    key = cache_key(rec)
    sym = 0
    if w.params[P_RANDOM_SYMMETRY] > 0.0:
        sym = np.random.randint(0, 8)
        if sym != 0:
            key ^= np.uint64(sym) * np.uint64(0xD6E8FEB86659FD92) & ~np.uint64(1)
    w.leaf_sym[leaf_slot] = sym
    w.leaf_key[leaf_slot] = key
    return key


@njit(cache=True)
def encode_waiting_leaf(ws, scratch, rec, planes, row: int, leaf_slot: int) -> None:
    """Encode the leaf waiting in ``leaf_slot`` (``hold_leaf``; its board
    ``rec``) into ``planes[row]`` (encoder ``ws.encoder`` with its
    ``scratch``, in the leaf's symmetry) and collect its moves when it
    needs them."""
    w = ws[0]
    idle = encode_leaf(w.encoder, scratch, w.root, w.root_serial, rec, planes[row], w.depths[leaf_slot], w.leaf_idle)
    if w.leaf_collect[leaf_slot]:
        collect_moves(ws, rec, leaf_slot, idle > 0)
    sym = w.leaf_sym[leaf_slot]
    if sym != 0:
        permute_planes(planes[row], w.sym_map[sym], w.sym_buf)


@njit(cache=True, nogil=True)
def descend_round(tree, planes, slot: int, want: int, forced, cache):
    """Up to ``want`` playouts' walks; ``forced`` [F] int64 names the root
    child (as in ``walk``) of each playout in turn: the round's j-th
    playout (ends of the game and cache hits count, a collision does not)
    takes ``forced[j]``, and an empty ``forced`` lets selection choose. The k-th
    leaf that needs the network waits in leaf slot k for its row
    ``planes[slot + k]``, which ``encode_rounds`` writes (encoded here at
    once unless ``ws.encode_off_loop``). Ends of the game
    are backed up at once, leaves found in ``cache`` are encoded and
    finished from it; a collision ends the round early. Returns
    ``(leaves, completed, hits)``: leaves waiting on the network, playouts
    already finished (ends of the game and cache hits) and, of those,
    cache hits."""
    ws, nodes, edges, boards = borrowed(tree[0]), borrowed(tree[1]), borrowed(tree[2]), borrowed(tree[3])
    scratch = borrowed(tree[4])
    planes = borrowed(planes)
    keys, c_policy, c_wdl = borrowed(cache[0]), borrowed(cache[1]), borrowed(cache[2])
    leaves = 0
    completed = 0
    hits = 0
    off_loop = ws[0].encode_off_loop != 0
    for _ in range(want):
        outcome = walk(ws, nodes, edges, boards, forced[completed + leaves] if forced.shape[0] > 0 else -1, leaves)
        if outcome == WALK_COLLISION:
            break
        if outcome == WALK_END:
            backup(ws, nodes, leaves, area_outcome(leaf_rec(boards, leaves)), False)
            completed += 1
            continue
        rec = leaf_rec(boards, leaves)
        key = hold_leaf(ws, nodes, rec, leaves)
        j = cache_lookup(keys, key)
        if j >= 0 or not off_loop:
            encode_waiting_leaf(ws, scratch, rec, planes, slot + leaves, leaves)  # a hit needs its moves; its row is the next leaf's
        if j >= 0:
            finish(ws, nodes, edges, leaves, c_policy, c_wdl, j)
            completed += 1
            hits += 1
            continue
        leaves += 1
    return leaves, completed, hits


@njit(cache=True, nogil=True)
def encode_rounds(like_ws, like_board, like_scratch, rounds, planes) -> None:
    """Encode the waiting leaves of several searches' rounds
    (``descend_round``) into ``planes`` and collect their moves: round
    ``j`` is ``rounds[j] = (workspace, boards, scratch, slot, leaves)``
    [R, 5] int64: the addresses (``ndarray.ctypes.data``) of its search's
    workspace, leaf boards and encoder scratch, reached through
    ``borrowed_at`` with ``like_ws`` (any workspace), ``like_board`` (any
    ``[1]`` board array) and ``like_scratch`` (any scratch of the rounds'
    encoder), and its rows ``slot .. slot + leaves - 1``. One call for a
    whole batch: the evaluator runs it in a thread of its own, the GIL
    released, while the searches wait for their answers
    (``mcts.encode_leaf_rounds``)."""
    planes = borrowed(planes)
    for j in range(rounds.shape[0]):
        ws = borrowed_at(like_ws, rounds[j, 0])
        scratch = borrowed_at(like_scratch, rounds[j, 2])
        slot = rounds[j, 3]
        for i in range(rounds[j, 4]):
            rec = borrowed_at(like_board, rounds[j, 1] + i * BOARD_BYTES)[0]
            encode_waiting_leaf(ws, scratch, rec, planes, slot + i, i)


@njit(cache=True, nogil=True)
def finish_round(tree, leaves: int, answers, row: int, cache) -> None:
    """Finish the round's ``leaves`` waiting leaves with rows ``row ..
    row + leaves - 1`` of a batch's ``answers``, and remember them in
    ``cache`` (a no-op when it has no slots)."""
    ws, nodes, edges = borrowed(tree[0]), borrowed(tree[1]), borrowed(tree[2])
    policy, wdl, score = borrowed(answers[0]), borrowed(answers[1]), borrowed(answers[2])
    kept = (borrowed(cache[0]), borrowed(cache[1]), borrowed(cache[2]), borrowed(cache[3]))
    w = ws[0]
    for i in range(leaves):
        finish(ws, nodes, edges, i, policy, wdl, row + i)
        cache_store(kept, w.leaf_key[i], (policy, wdl, score), row + i)
