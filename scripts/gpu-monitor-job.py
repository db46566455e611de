# gpu-monitor-job.py: one training-like GPU loop for scripts/gpu-monitor.sh: MODE compute (matmuls back to back),
# input (a 150 ms sleep standing for a slow data loader before each short burst), leak (compute, plus a 32 MiB
# tensor kept in a list every 0.5 s). Runs for SECONDS. Usage: python3 gpu-monitor-job.py MODE SECONDS
import sys
import time

import torch


def main():
    mode, secs = sys.argv[1], float(sys.argv[2])
    dev = torch.device("cuda", 0)
    a = torch.randn(8192, 8192, device=dev)
    b = torch.randn(8192, 8192, device=dev)
    kept, last_keep, end = [], time.monotonic(), time.monotonic() + secs
    while time.monotonic() < end:
        if mode == "input":
            time.sleep(0.15)  # the data path: the GPU has nothing to do
            for _ in range(4):
                c = a @ b
        else:
            for _ in range(20):
                c = a @ b
        torch.cuda.synchronize()
        if mode == "leak" and time.monotonic() - last_keep >= 0.5:
            kept.append(torch.empty(8 * 1024 * 1024, device=dev).fill_(1.0))  # 32 MiB that is never freed
            last_keep = time.monotonic()
    print(f"{mode}: done, {len(kept)} tensors kept, c[0,0]={c[0, 0].item():.1f}")


if __name__ == "__main__":
    main()
