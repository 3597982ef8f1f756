"""Tests of the feature search: the accelerated index gives exactly the brute-force answer, ties and bounds included."""
import numpy as np
import pytest

from core.matching.search import FeatureIndex, squared_distances

DIMS = 27


def smooth_features(frames: int, seed: int = 0) -> np.ndarray:
    """Motion-capture-like features: sums of slow sinusoids plus a random walk, normalised per dim."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)[:, None]
    x = np.zeros((frames, DIMS))
    for _ in range(3):
        freq, phase = rng.uniform(1 / 300, 1 / 20, DIMS), rng.uniform(0, 2 * np.pi, DIMS)
        x += rng.uniform(0.3, 1, DIMS) * np.sin(2 * np.pi * freq * t + phase)
    x += np.cumsum(rng.normal(0, 0.02, (frames, DIMS)), axis=0)
    return (x - x.mean(0)) / x.std(0)


def random_searchable(frames: int, fraction_off: float = 0.1, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).random(frames) >= fraction_off


def queries_near(features: np.ndarray, count: int, sigma: float, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return features[rng.integers(0, len(features), count)] + rng.normal(0, sigma, (count, features.shape[1]))


@pytest.fixture(scope="module")
def database():
    features = smooth_features(3001)  # not a multiple of either box size
    return FeatureIndex(features, random_searchable(len(features)))


def test_accelerated_equals_brute_force(database):
    queries = np.concatenate([queries_near(database.features, 100, 0.1), queries_near(database.features, 100, 0.3, 3),
                              np.random.default_rng(4).normal(0, 2, (20, DIMS))])
    for query in queries:
        brute = database.nearest_brute(query)
        assert database.nearest(query) == brute
        assert database.searchable[brute[0]]
        assert brute[1] == squared_distances(database.features[database.searchable], query).min()


def test_box_sizes_do_not_change_the_answer(database):
    other = FeatureIndex(database.features, database.searchable, small_box=8, large_box=24)
    for query in queries_near(database.features, 50, 0.2):
        assert other.nearest(query) == database.nearest_brute(query)


def test_exact_duplicates_return_the_smallest_index():
    base = smooth_features(500, seed=5)
    features = np.tile(base, (4, 1))
    searchable = np.tile(random_searchable(len(base), seed=6), 4)
    searchable[:250] = False  # the first copy is partly off, so the answer must come from the right copy
    index = FeatureIndex(features, searchable, brute_force_rows=0)  # the box layers, though a scan is faster here
    for query in queries_near(base, 100, 0.2, seed=7):
        frame, cost = index.nearest(query)
        assert (frame, cost) == index.nearest_brute(query)
        copies = frame % len(base) + len(base) * np.arange(4)
        assert frame == copies[searchable[copies]].min()


def test_non_searchable_frame_is_never_returned(database):
    for frame in np.flatnonzero(~database.searchable)[:30]:
        query = database.features[frame]
        for found, cost in (database.nearest(query), database.nearest_brute(query)):
            assert found != frame and database.searchable[found] and cost > 0


def test_best_cost_is_a_strict_bound(database):
    query = queries_near(database.features, 1, 0.2)[0]
    frame, cost = database.nearest_brute(query)
    below = cost * 0.999
    assert database.nearest(query, 7, below) == (7, below) == database.nearest_brute(query, 7, below)
    # an equal cost does not switch either: only strictly better frames are returned
    assert database.nearest(query, 7, cost) == (7, cost) == database.nearest_brute(query, 7, cost)
    assert database.nearest(query, 7, cost * 1.001) == (frame, cost)


def test_no_searchable_frames_returns_the_given_best():
    features = smooth_features(100)
    index = FeatureIndex(features, np.zeros(len(features), dtype=bool), brute_force_rows=0)
    assert index.nearest(features[3], 5, 2.5) == (5, 2.5) == index.nearest_brute(features[3], 5, 2.5)
    assert index.nearest(features[3]) == (-1, np.inf) == index.nearest_brute(features[3])


def test_single_searchable_frame():
    features = smooth_features(100)
    searchable = np.zeros(len(features), dtype=bool)
    searchable[42] = True
    index = FeatureIndex(features, searchable, brute_force_rows=0)
    expected = (42, squared_distances(features[42:43], features[0])[0])
    assert index.nearest(features[0]) == index.nearest_brute(features[0]) == expected


def test_a_small_index_scans_every_frame_with_the_boxes_answer():
    features = smooth_features(1500, seed=8)
    searchable = random_searchable(len(features), seed=9)
    scanned, boxed = FeatureIndex(features, searchable), FeatureIndex(features, searchable, brute_force_rows=0)
    assert searchable.sum() < scanned.brute_force_rows
    for query in queries_near(features, 100, 0.2, seed=10):
        frame, cost = scanned.nearest(query)
        assert (frame, cost) == boxed.nearest(query) == scanned.nearest_brute(query)
        assert scanned.nearest(query, 7, cost) == (7, cost) == boxed.nearest(query, 7, cost)
