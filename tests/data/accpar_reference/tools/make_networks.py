"""Generate the random layer-description files used as AccPar reference fixtures.

The files follow the text format read by the AccPar reference program (see
docs/accpar-reference-semantics.md).  Shapes are made consistent with the
conventions of the two example networks (Alexnet.txt, Vgg11.txt):

* CONV layer l+1 has in_ch = out_ch of layer l and in_fmap = out_fmap of layer l;
* ``out_fmap`` is the feature-map size *after* pooling: out = conv_out // pool,
  where conv_out = (in + 2*(k//2) - k) // stride + 1;
* the first FC layer after a CONV layer has in_ch = out_ch * out_fmap_h * out_fmap_w;
* FC layer l+1 has in_ch = out_ch of layer l;
* every network ends with an FC layer.

Deterministic: ``python make_networks.py OUTDIR`` always writes the same files.
"""
import random
import sys
from pathlib import Path


def conv_block(rng, name, in_ch, h, w, kernel, out_ch, stride, pool):
    ch = (h + 2 * (kernel // 2) - kernel) // stride + 1
    cw = (w + 2 * (kernel // 2) - kernel) // stride + 1
    oh, ow = ch // pool, cw // pool
    assert oh >= 1 and ow >= 1, (name, h, w, kernel, stride, pool)
    lines = [f"{name} CONV", f"in_ch {in_ch}", f"in_fmap_h {h}", f"in_fmap_w {w}",
             f"kernel {kernel}", f"out_ch {out_ch}", f"out_fmap_h {oh}",
             f"out_fmap_w {ow}", f"pool {pool}"]
    return lines, oh, ow


def build(rng, n_conv, n_fc, in_ch, h, w, kernels, channels, fc_widths, strides=None,
          pools=None):
    lines, layers = [], 0
    ch = in_ch
    for i in range(n_conv):
        k = kernels[i]
        s = strides[i] if strides else 1
        p = pools[i] if pools else rng.choice([1, 2])
        block, h, w = conv_block(rng, f"conv{i + 1}", ch, h, w, k, channels[i], s, p)
        lines += block
        ch = channels[i]
        layers += 1
    feat = ch * h * w if n_conv else ch
    for j in range(n_fc):
        lines += [f"fc{j + 1} FC", f"in_ch {feat}", f"out_ch {fc_widths[j]}"]
        feat = fc_widths[j]
        layers += 1
    return "\n".join([f"num_layers {layers}"] + lines) + "\n"


def main(outdir):
    rng = random.Random(20200222)
    out = Path(outdir)
    nets = {}
    # 1: small CNN, mixed kernels, pools chosen at random
    nets["rand_cnn7.txt"] = build(rng, 5, 2, 3, 64, 64, [5, 3, 3, 1, 3],
                                  [32, 64, 96, 48, 128], [512, 10],
                                  strides=[1, 1, 1, 1, 1])
    # 2: FC-only, 3 layers
    nets["rand_fc3.txt"] = build(rng, 0, 3, 784, 1, 1, [], [], [300, 100, 10])
    # 3: FC-only, 6 layers, varied (odd) widths
    nets["rand_fc6.txt"] = build(rng, 0, 6, 1000, 1, 1, [], [],
                                 [rng.choice([37, 257, 1024, 3000, 4096, 129]) for _ in range(5)] + [17])
    # 4: 12 layers (9 CONV + 3 FC), 1x1 and 3x3 kernels, VGG-like
    k4 = [3, 1, 3, 1, 3, 3, 1, 3, 3]
    c4 = [64, 32, 128, 64, 256, 256, 128, 512, 512]
    p4 = [2, 1, 2, 1, 2, 1, 1, 2, 2]
    nets["rand_cnn12.txt"] = build(rng, 9, 3, 3, 128, 128, k4, c4, [2048, 1024, 100],
                                   pools=p4)
    # 5: non-square feature maps, 3 CONV + 1 FC (4 layers), kernels 7/5/3, stride 2 first
    nets["rand_rect4.txt"] = build(rng, 3, 1, 1, 96, 160, [7, 5, 3], [24, 40, 80], [11],
                                   strides=[2, 1, 1], pools=[2, 2, 1])
    # 6: AlexNet-like with odd channel counts, kernels 11/7/5/3/1, 8 layers
    nets["rand_odd8.txt"] = build(rng, 6, 2, 3, 227, 227, [11, 7, 5, 3, 1, 3],
                                  [rng.randrange(17, 200, 2) for _ in range(6)], [999, 37],
                                  strides=[4, 1, 1, 1, 1, 1], pools=[2, 2, 1, 2, 1, 2])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in nets.items():
        (out / name).write_text(text)
        print(name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
