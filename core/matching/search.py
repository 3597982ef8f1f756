"""Nearest-neighbour search over a feature database: brute force and an exact accelerated index (bounding-box layers).

The accelerated search follows the scheme of Daniel Holden's Motion-Matching `database.h`: the searchable frames
are grouped into consecutive runs (small boxes of 16 frames inside large boxes of 64), each box keeps the per-dim
centre and half extent of its frames, and a box is skipped when the distance from the query to the box already
exceeds the best cost found. Here every layer is processed in one numpy batch instead of a loop over boxes and frames.

Both searches return the same frame, bit for bit: costs are always computed by `squared_distances`, and among
equal costs the smallest frame index wins.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Box bounds and frame costs are summed in different orders, so a bound may exceed a frame's cost by a rounding
# error; a box is pruned only when its bound exceeds the best cost by more than this margin.
RELATIVE_MARGIN = 1e-9
ABSOLUTE_MARGIN = 1e-12
# Large boxes (lowest bounds first) whose frames are evaluated before pruning, to start from a good best cost;
# on smooth 27-dim data 8 prunes about twice as well as 1 or 2, and more costs more than it saves.
SEED_BOXES = 4
# Small boxes whose frames are evaluated next, among those the large boxes let through.
SEED_SMALL_BOXES = 32
# Below this many searchable frames a brute-force scan (one distance call) is faster than the box layers' dozen
# numpy calls: 14 against 150 us at 389 frames, even at about 2,000, the layers ahead from about 3,000.
BRUTE_FORCE_ROWS = 2048


def squared_distances(features: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of each row of features (M, D) to query (D,)."""
    diff = features - query
    return np.einsum("ij,ij->i", diff, diff)


def box_lower_bounds(box_centre: np.ndarray, box_half: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Squared distance from query (D,) to each axis-aligned box (B, D) given by its centre and half extent:
    a lower bound on its frames' costs. Per dim the gap to the box is max(|q - centre| - half, 0)."""
    gap = box_centre - query
    np.abs(gap, out=gap)
    gap -= box_half
    np.maximum(gap, 0.0, out=gap)
    return np.einsum("ij,ij->i", gap, gap)


def box_extents(rows: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-dim centre and half extent of each consecutive run of `size` rows (the last run may be shorter)."""
    starts = np.arange(0, len(rows), size)
    low, high = np.minimum.reduceat(rows, starts, axis=0), np.maximum.reduceat(rows, starts, axis=0)
    return 0.5 * (low + high), 0.5 * (high - low)


def members(boxes: np.ndarray, size: int, count: int) -> np.ndarray:
    """Indices, in increasing order, of the items of the given boxes (sorted), each box holding `size` of `count`."""
    items = (boxes[:, None] * size + np.arange(size)).ravel()
    return items[items < count]


def pruning_bound(best_cost: float) -> float:
    """The largest box lower bound that may still hold a frame of cost <= best_cost, allowing for rounding."""
    return best_cost * (1.0 + RELATIVE_MARGIN) + ABSOLUTE_MARGIN


@dataclass
class FeatureIndex:
    """A feature database with the searchable frames grouped into two layers of bounding boxes."""

    features: np.ndarray
    searchable: np.ndarray
    small_box: int = 16
    large_box: int = 64
    brute_force_rows: int = BRUTE_FORCE_ROWS
    """`nearest` scans every frame when there are fewer searchable frames than this (the same answer)."""
    rows: np.ndarray = field(init=False, repr=False)
    frame_of_row: np.ndarray = field(init=False, repr=False)
    small_centre: np.ndarray = field(init=False, repr=False)
    small_half: np.ndarray = field(init=False, repr=False)
    large_centre: np.ndarray = field(init=False, repr=False)
    large_half: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.features = np.asarray(self.features, dtype=np.float64)
        self.searchable = np.asarray(self.searchable, dtype=bool)
        if self.features.ndim != 2 or self.searchable.shape != (len(self.features),):
            raise ValueError("features must be (N, D) and searchable (N,)")
        if self.small_box < 1 or self.large_box % self.small_box:
            raise ValueError("large_box must be a positive multiple of small_box")
        self.frame_of_row = np.flatnonzero(self.searchable)
        self.rows = np.ascontiguousarray(self.features[self.frame_of_row])
        self.small_centre, self.small_half = box_extents(self.rows, self.small_box)
        self.large_centre, self.large_half = box_extents(self.rows, self.large_box)

    def nearest_brute(self, query, best_index: int = -1, best_cost: float = np.inf) -> tuple[int, float]:
        """Brute force: the searchable frame with the smallest squared distance to query, if it is below best_cost;
        else (best_index, best_cost)."""
        return self._best_of_rows(np.arange(len(self.rows)), self.rows, query, best_index, best_cost)

    def nearest(self, query, best_index: int = -1, best_cost: float = np.inf) -> tuple[int, float]:
        """Same answer as nearest_brute, exactly, using the box layers to skip frames (a large enough index)."""
        query = np.asarray(query, dtype=np.float64)
        if len(self.rows) < max(self.brute_force_rows, 1):
            return self.nearest_brute(query, best_index, best_cost)
        large_bounds = box_lower_bounds(self.large_centre, self.large_half, query)
        bound = pruning_bound(min(best_cost, self._seed_cost(large_bounds, query)))
        # Every frame with cost <= the seed's cost lies in a kept small box of a kept large box, so the minimum
        # over the kept frames, taken in index order, is the global minimum with the smallest index among ties.
        per_large = self.large_box // self.small_box
        small = members(np.flatnonzero(large_bounds <= bound), per_large, len(self.small_centre))
        small_bounds = box_lower_bounds(self.small_centre[small], self.small_half[small], query)
        # Tighten the bound with the frames of the most promising small boxes before the final cut.
        count = min(SEED_SMALL_BOXES, len(small))
        if count:
            closest = np.sort(small[np.argpartition(small_bounds, count - 1)[:count]])
            rows = members(closest, self.small_box, len(self.rows))
            bound = min(bound, pruning_bound(float(squared_distances(self.rows[rows], query).min())))
        small = small[small_bounds <= bound]
        rows = members(small, self.small_box, len(self.rows))
        return self._best_of_rows(rows, self.rows[rows], query, best_index, best_cost)

    def _seed_cost(self, large_bounds: np.ndarray, query: np.ndarray) -> float:
        """Smallest cost among the frames of the large boxes with the lowest bounds: a first bound for pruning."""
        count = min(SEED_BOXES, len(large_bounds))
        boxes = np.sort(np.argpartition(large_bounds, count - 1)[:count])
        rows = members(boxes, self.large_box, len(self.rows))
        return float(squared_distances(self.rows[rows], query).min())

    def _best_of_rows(self, rows: np.ndarray, candidates: np.ndarray, query, best_index: int,
                      best_cost: float) -> tuple[int, float]:
        """The candidate (compacted rows, increasing) with the smallest cost if below best_cost, as a frame index."""
        if len(rows) == 0:
            return best_index, best_cost
        costs = squared_distances(candidates, np.asarray(query, dtype=np.float64))
        i = int(np.argmin(costs))
        if costs[i] < best_cost:
            return int(self.frame_of_row[rows[i]]), float(costs[i])
        return best_index, best_cost
