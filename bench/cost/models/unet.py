"""A small UNet (three levels, 32-64-128 channels, GroupNorm, transposed-convolution upsampling)
trained to denoise random 64x64 images with Adam: the calibration's encoder-decoder."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.GroupNorm(8, cout),
        nn.SiLU(),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.GroupNorm(8, cout),
        nn.SiLU(),
    )


class UNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.d1, self.d2, self.mid = conv(3, 32), conv(32, 64), conv(64, 128)
        self.u2 = nn.ConvTranspose2d(128, 64, 2, stride=2)
        self.c2 = conv(128, 64)
        self.u1 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.c1 = conv(64, 32)
        self.out = nn.Conv2d(32, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        m = self.mid(F.max_pool2d(b, 2))
        y = self.c2(torch.cat([self.u2(m), b], dim=1))
        y = self.c1(torch.cat([self.u1(y), a], dim=1))
        return self.out(y)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch", type=int, default=4)
    a = p.parse_args()
    torch.manual_seed(0)
    model = UNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    clean = torch.randn(a.batch, 3, 64, 64)
    noisy = clean + 0.1 * torch.randn_like(clean)
    for _ in range(a.steps):
        opt.zero_grad()
        loss = F.mse_loss(model(noisy), clean)
        loss.backward()
        opt.step()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
