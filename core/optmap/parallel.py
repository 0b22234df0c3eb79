"""Parallel scoring: a batch of mappings split over local worker processes or a Dask cluster.

:class:`ParallelScorer` is a drop-in ``batch_evaluate`` for the :class:`~optmap.search.Evaluator`:
it cuts each batch into one chunk per worker, scores the chunks with the cost model's own
``evaluate_batch`` (vectorised, or one mapping at a time for models without it) and joins the
columns in order, so results are identical to scoring in-process.

Decisions:

- It pays off for cost models without a vectorised batch evaluator, whose mappings are scored
  one by one in Python; a vectorised model is usually fastest in-process, but the pool splits
  its batches too when asked.
- The cost model travels once per worker (pickled into each local worker at start-up; scattered
  to every Dask worker), never with each batch.
- Local workers start with ``spawn``: a fresh interpreter, safe next to the threads of Dask,
  Optuna or a progress bar.
- Dask is optional (``pip install 'optmap[distributed]'``) and imported only when a scheduler
  address is given; the cluster's workers need optmap and the problem's plugins installed.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from optmap.cost import evaluate_batch
from optmap.errors import OptmapError

_MODEL = None  # the cost model inside a local worker process


def _install(payload: bytes) -> None:
    global _MODEL
    _MODEL = pickle.loads(payload)


def _score_local(X: np.ndarray) -> dict[str, np.ndarray]:
    return evaluate_batch(_MODEL, X)


def _score_with(model, X: np.ndarray) -> dict[str, np.ndarray]:
    return evaluate_batch(model, X)


def _join(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {key: np.concatenate([np.asarray(part[key]) for part in parts]) for key in parts[0]}


class ParallelScorer:
    """Scores batches in ``workers`` local processes, or on the Dask cluster at ``scheduler``."""

    def __init__(self, cost_model, workers: int | None = None, scheduler: str | None = None,
                 timeout: float = 10.0) -> None:
        if workers is not None and workers < 1:
            raise OptmapError(f"--workers must be >= 1, got {workers}")
        self.cost_model = cost_model
        self.workers = workers
        self.scheduler = scheduler
        self._pool = None
        self._client = None
        self._model_future = None
        if scheduler:
            self._connect(scheduler, timeout)
        elif workers:
            self._start(workers)

    # --- local processes ------------------------------------------------------------------
    def _start(self, workers: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            payload = pickle.dumps(self.cost_model)
        except Exception as exc:
            raise OptmapError(
                f"the cost model cannot be sent to worker processes ({type(exc).__name__}: {exc}); run without --workers"
            ) from None
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_install, initargs=(payload,))
        self.slots = workers

    # --- Dask -----------------------------------------------------------------------------
    def _connect(self, address: str, timeout: float) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise OptmapError("--scheduler needs Dask: pip install 'optmap[distributed]'") from None
        try:
            self._client = Client(address, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise OptmapError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self._model_future = self._client.scatter(self.cost_model, broadcast=True, hash=False)
        self.slots = max(1, sum(self._client.nthreads().values()))

    # --- scoring --------------------------------------------------------------------------
    def __call__(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.asarray(X, float)
        if self._pool is None and self._client is None:
            return evaluate_batch(self.cost_model, X)
        chunks = [c for c in np.array_split(X, min(self.slots, len(X))) if len(c)]
        if self._client is not None:
            futures = self._client.map(_score_with, [self._model_future] * len(chunks), chunks, pure=False)
            return _join(self._client.gather(futures))
        return _join(list(self._pool.map(_score_local, chunks)))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "ParallelScorer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
