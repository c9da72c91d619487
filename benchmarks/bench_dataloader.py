"""DataLoader worker processes against one process, and PyTorch's DataLoader beside each: an epoch
over 256 samples whose __getitem__ costs 1 ms (half of it computing, half waiting, as decoding
and reading a file do), batch 16."""
import time

import numpy as np

from _harness import Workload


def _dataset(lib):
    class OneMs(lib.utils.data.Dataset):
        def __len__(self):
            return 256

        def __getitem__(self, i):
            t_end = time.perf_counter() + 0.0005
            x = np.full(64, float(i), np.float32)
            while time.perf_counter() < t_end:   # 0.5 ms of work
                x = np.sqrt(x * x + 1.0)
            time.sleep(0.0005)                   # 0.5 ms of waiting
            return lib.from_numpy(x), i
    return OneMs()


def _epoch(workers):
    def make(lib):
        loader = lib.utils.data.DataLoader(_dataset(lib), batch_size=16, num_workers=workers,
                                           persistent_workers=workers > 0)

        def step():
            for _ in loader:
                pass
        return step
    return make


WORKLOADS = [Workload(f"epoch_1ms_items_{w}_workers", ember=_epoch(w), unit="epoch of 256", min_time=2.0,
                      repeats=3) for w in (0, 2, 4)]
