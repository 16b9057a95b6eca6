#!/usr/bin/env python3
"""Write the fixed training slice: data/train_images.npy and data/train_labels.npy.

The slice is synthetic: each of the 10 classes is a striped pattern with its own
orientation and colour tint, plus pixel noise. Raw pixels are 8-bit integers and
normalisation divides by a power of two, so the float32 output is exact and the
files are byte-identical on every machine and NumPy version (RandomState's
stream is frozen). Bump PREPROCESS_VERSION whenever the output changes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

PREPROCESS_VERSION = "1.1"
SEED = 1234
NUM_IMAGES = 64
NUM_CLASSES = 10
IMAGE_SIZE = 16
PIXEL_MEAN = 127.5
PIXEL_SCALE = 64.0

# Per class: (x step, y step, stripe period) and an RGB tint in [-40, 40].
STRIPES = [(1, 0, 4), (0, 1, 4), (1, 1, 4), (1, -1, 4), (1, 0, 8),
           (0, 1, 8), (1, 1, 8), (1, -1, 8), (2, 1, 6), (1, 2, 6)]
TINTS = [(40, 0, -40), (-40, 0, 40), (0, 40, -40), (0, -40, 40), (40, -40, 0),
         (-40, 40, 0), (20, 20, -40), (-40, 20, 20), (20, -40, 20), (0, 0, 0)]


def class_pattern(label: int) -> np.ndarray:
    """uint8-range pattern of one class, shape (3, 16, 16), as int32."""
    dx, dy, period = STRIPES[label]
    yy, xx = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE]
    stripes = ((dx * xx + dy * yy) % period < period // 2).astype(np.int32)
    base = 64 + 128 * stripes
    tint = np.asarray(TINTS[label], dtype=np.int32)[:, None, None]
    return base[None, :, :] + tint


def synthesize(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    labels = rng.permutation(np.arange(NUM_IMAGES) % NUM_CLASSES).astype(np.int64)
    noise = rng.randint(-48, 49, size=(NUM_IMAGES, 3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.int32)
    patterns = np.stack([class_pattern(int(c)) for c in labels])
    raw = np.clip(patterns + noise, 0, 255).astype(np.uint8)
    images = (raw.astype(np.float32) - np.float32(PIXEL_MEAN)) / np.float32(PIXEL_SCALE)
    return np.ascontiguousarray(images, dtype=np.float32), labels


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data",
                        help="output folder (default: data/ next to this script)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)

    images, labels = synthesize(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "train_images.npy", images)
    np.save(args.out / "train_labels.npy", labels)
    print(f"preprocess {PREPROCESS_VERSION}: wrote {images.shape} {images.dtype} images and "
          f"{labels.shape} {labels.dtype} labels to {args.out}")


if __name__ == "__main__":
    main()
