"""The handout's figures, drawn as SVG from the closed forms they illustrate, so they stay true.

`staff figures` rewrites them in handout/figures/; `staff figures --check` fails when a checked-in
figure differs from what this script draws. Every number in a figure is computed here, from the
same formulas the handout states (nothing is imported from cs336_basics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

FIGURES_DIR = Path("handout") / "figures"
FONT = "font-family=\"Helvetica, Arial, sans-serif\""
SIGN, EXPONENT, MANTISSA = "#e6550d", "#3182bd", "#31a354"
INK, MUTED, GRID = "#222222", "#666666", "#bbbbbb"


@dataclass
class Svg:
    """A minimal SVG writer: shapes are appended as text, numbers printed the same way every time."""

    width: int
    height: int
    parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = "white") -> None:
        self.parts.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" stroke="{stroke}"/>')

    def text(self, x: float, y: float, content: str, size: int = 13, anchor: str = "start", fill: str = INK,
             weight: str = "normal") -> None:
        self.parts.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
                          f'font-weight="{weight}">{escape(content)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 1.5) -> None:
        self.parts.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"/>')

    def legend(self, x: float, y: float, items: list[tuple[str, str]], spacing: int = 170) -> None:
        for i, (colour, label) in enumerate(items):
            self.rect(x + i * spacing, y - 11, 14, 14, colour)
            self.text(x + i * spacing + 20, y, label)

    def render(self, title: str) -> str:
        body = "\n  ".join(self.parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" {FONT} role="img" aria-label="{escape(title)}">\n'
                f"  <title>{escape(title)}</title>\n"
                f'  <rect width="100%" height="100%" fill="white"/>\n  {body}\n</svg>\n')


# ---- floating-point formats (handout §1.2) ----

@dataclass(frozen=True)
class FloatFormat:
    name: str
    exponent_bits: int
    mantissa_bits: int
    finite_only: bool = False  # the "fn" convention: no infinities

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def largest_finite(self) -> float:
        """All-ones exponent minus one (IEEE) or all-ones (fn), with the largest non-NaN mantissa."""
        m = self.mantissa_bits
        if self.finite_only:
            return (2 - 2.0 ** (1 - m)) * 2.0 ** (2**self.exponent_bits - 1 - self.bias)
        return (2 - 2.0**-m) * 2.0 ** (2**self.exponent_bits - 2 - self.bias)


FORMATS = [
    FloatFormat("float32", 8, 23),
    FloatFormat("bfloat16", 8, 7),
    FloatFormat("float16", 5, 10),
    FloatFormat("float8_e4m3fn", 4, 3, finite_only=True),
    FloatFormat("float8_e5m2", 5, 2),
]


def _short(value: float) -> str:
    """65504 as is; 3.4028235e38 as 3.403e38."""
    if value < 1e6:
        return f"{value:g}"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def float_formats() -> str:
    cell, left, top, row = 20, 150, 60, 54
    svg = Svg(left + 32 * cell + 170, top + row * len(FORMATS) + 20)
    svg.legend(left, 24, [(SIGN, "sign"), (EXPONENT, "exponent"), (MANTISSA, "mantissa")], spacing=110)
    svg.text(left + 32 * cell, 24, "most significant bit on the left", anchor="end", fill=MUTED, size=12)
    for i, fmt in enumerate(FORMATS):
        y = top + i * row
        svg.text(10, y + 17, fmt.name, weight="bold")
        svg.text(10, y + 34, f"{fmt.bits // 8} byte{'s' if fmt.bits > 8 else ''}, bias {fmt.bias}", size=12, fill=MUTED)
        fields = [(SIGN, 1, "S"), (EXPONENT, fmt.exponent_bits, f"exponent {fmt.exponent_bits}"),
                  (MANTISSA, fmt.mantissa_bits, f"mantissa {fmt.mantissa_bits}")]
        x = left
        for colour, width, label in fields:
            svg.rect(x, y, width * cell, 30, colour)
            for bit in range(1, width):  # short ticks mark the bits without crossing the label
                svg.line(x + bit * cell, y, x + bit * cell, y + 5, stroke="white", width=1)
                svg.line(x + bit * cell, y + 25, x + bit * cell, y + 30, stroke="white", width=1)
            fits = len(label) * 7 < width * cell
            svg.text(x + width * cell / 2, y + 20, label if fits else label.split()[-1], anchor="middle", fill="white",
                     weight="bold", size=12)
            x += width * cell
        svg.text(x + 10, y + 20, f"largest {_short(fmt.largest_finite)}", size=12)
    return svg.render("Bit layouts of float32, bfloat16, float16, float8_e4m3fn and float8_e5m2")


# ---- a view over a storage (handout §2.1) ----

VIEW_SHAPE, VIEW_STRIDES, VIEW_OFFSET, STORAGE_SIZE = (4, 3), (6, 1), 0, 24  # torch.arange(24).reshape(4, 6)[:, :3]
PICKED = (2, 1)
ROW_TINTS = ["#fdd0a2", "#c6dbef", "#c7e9c0", "#dadaeb"]


def storage_index(index: tuple[int, ...], strides: tuple[int, ...], offset: int) -> int:
    return offset + sum(i * s for i, s in zip(index, strides, strict=True))


def tensor_strides() -> str:
    cell, left, storage_y, grid_y, grid_cell = 30, 20, 84, 150, 40
    svg = Svg(left + STORAGE_SIZE * cell + 20, grid_y + VIEW_SHAPE[0] * grid_cell + 36)
    svg.text(left, 24, "x = torch.arange(24).reshape(4, 6)[:, :3]", weight="bold")
    svg.text(left, 44, f"shape {VIEW_SHAPE}, strides {VIEW_STRIDES}, offset {VIEW_OFFSET}: "
                       "each row of x is 3 neighbouring storage elements, and rows start 6 apart", size=12, fill=MUTED)
    rows, columns = VIEW_SHAPE
    owner = {storage_index((r, c), VIEW_STRIDES, VIEW_OFFSET): r for r in range(rows) for c in range(columns)}
    for s in range(STORAGE_SIZE):
        svg.rect(left + s * cell, storage_y, cell, cell, ROW_TINTS[owner[s]] if s in owner else "#f0f0f0", stroke=GRID)
        svg.text(left + s * cell + cell / 2, storage_y + 20, str(s), anchor="middle", size=12,
                 fill=INK if s in owner else MUTED)
    svg.text(left, storage_y - 8, "storage (24 elements; the shaded ones are seen by x)", size=12, fill=MUTED)
    svg.text(left, grid_y + VIEW_SHAPE[0] * grid_cell + 20, "x as a 4 x 3 tensor; each value is its storage index",
             size=12, fill=MUTED)
    for r in range(VIEW_SHAPE[0]):
        for c in range(VIEW_SHAPE[1]):
            x, y = left + c * grid_cell, grid_y + r * grid_cell
            svg.rect(x, y, grid_cell, grid_cell, ROW_TINTS[r], stroke=GRID)
            svg.text(x + grid_cell / 2, y + 25, str(storage_index((r, c), VIEW_STRIDES, VIEW_OFFSET)), anchor="middle")
    target = storage_index(PICKED, VIEW_STRIDES, VIEW_OFFSET)
    picked_x = left + PICKED[1] * grid_cell + grid_cell / 2
    picked_y = grid_y + PICKED[0] * grid_cell
    svg.rect(picked_x - grid_cell / 2, picked_y, grid_cell, grid_cell, "none", stroke=INK)
    svg.rect(left + target * cell, storage_y, cell, cell, "none", stroke=INK)
    svg.line(picked_x, picked_y, left + target * cell + cell / 2, storage_y + cell)
    note_x = left + VIEW_SHAPE[1] * grid_cell + 40
    terms = " + ".join(f"{i}·{s}" for i, s in zip(PICKED, VIEW_STRIDES))
    svg.text(note_x, grid_y + 60, f"x[{PICKED[0]}, {PICKED[1]}] lives at storage index", size=13)
    svg.text(note_x, grid_y + 80, f"offset + i·stride[0] + j·stride[1] = {VIEW_OFFSET} + {terms} = {target}", size=13,
             weight="bold")
    svg.text(note_x, grid_y + 110, f"one step down a column: +{VIEW_STRIDES[0]}; one step along a row: "
                                   f"+{VIEW_STRIDES[1]}", size=12, fill=MUTED)
    return svg.render("A 4 x 3 view over a storage of 24 elements, with strides (6, 1)")


# ---- memory of one training step (lecture's deep linear model with AdaGrad) ----

BYTES_PER_VALUE = 4  # float32
MEMORY_CASES = [(2, 4, 2), (64, 1024, 8), (16384, 1024, 8)]  # (batch B, dim D, layers L); the first is the lecture's
MEMORY_PARTS = [("parameters", "#3182bd"), ("gradients", "#9ecae1"), ("AdaGrad state (g2)", "#fd8d3c"),
                ("activations", "#74c476")]


def step_memory(batch: int, dim: int, layers: int) -> dict[str, int]:
    """Bytes of each part: parameters D²·L + D, activations B·D·L, and as many gradients and AdaGrad
    state values as parameters."""
    parameters = dim * dim * layers + dim
    values = {"parameters": parameters, "gradients": parameters, "AdaGrad state (g2)": parameters,
              "activations": batch * dim * layers}
    return {part: count * BYTES_PER_VALUE for part, count in values.items()}


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def training_step_memory() -> str:
    left, top, bar_w, bar_h, row = 200, 70, 560, 32, 64
    svg = Svg(left + bar_w + 110, top + row * len(MEMORY_CASES) + 40)
    svg.legend(20, 24, [(c, p) for p, c in MEMORY_PARTS], spacing=175)
    svg.text(20, 48, "float32 (4 bytes a value); share of one training step's memory, total at the right", size=12,
             fill=MUTED)
    for i, (batch, dim, layers) in enumerate(MEMORY_CASES):
        y = top + i * row
        parts = step_memory(batch, dim, layers)
        total = sum(parts.values())
        svg.text(20, y + 14, f"B={batch}, D={dim}, L={layers}", weight="bold")
        svg.text(20, y + 30, "the lecture's example" if i == 0 else f"{dim * dim * layers + dim:,} parameters",
                 size=12, fill=MUTED)
        x = left
        for part, colour in MEMORY_PARTS:
            width = bar_w * parts[part] / total
            svg.rect(x, y, width, bar_h, colour)
            if width > 44:
                svg.text(x + width / 2, y + 21, f"{100 * parts[part] / total:.0f}%", anchor="middle", size=12)
            x += width
        svg.text(left + bar_w + 10, y + 21, _bytes(total), size=12)
    svg.text(20, top + row * len(MEMORY_CASES) + 16, "parameters D²·L + D;  gradients and AdaGrad state: one value "
             "per parameter;  activations B·D·L", size=12, fill=MUTED)
    return svg.render("Memory of one training step of the deep linear model with AdaGrad")


# ---- FLOPs of forward and backward (handout §4.2) ----

FLOPS_D, FLOPS_K = 4, 2  # relative sizes of the drawing: w1 is D x D, w2 is D x K; B cancels out


def flops_segments(d: int, k: int) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """(forward, backward) matmuls of x -> w1 (d x d) -> w2 (d x k): (what, formula, FLOPs per data point)."""
    forward = [("h1 = x @ w1", "2·B·D²", 2 * d * d), ("h2 = h1 @ w2", "2·B·D·K", 2 * d * k)]
    backward = [("w2.grad", "2·B·D·K", 2 * d * k), ("h1.grad", "2·B·D·K", 2 * d * k),
                ("w1.grad", "2·B·D²", 2 * d * d), ("x.grad", "2·B·D²", 2 * d * d)]
    return forward, backward


def forward_backward_flops() -> str:
    d, k = FLOPS_D, FLOPS_K
    forward, backward = flops_segments(d, k)
    parameters = d * d + d * k
    left, top, scale, bar_h = 110, 60, 6.5, 46
    svg = Svg(left + int(scale * 4 * parameters) + 110, top + 2 * 80 + 40)
    svg.text(20, 24, f"x (B x D) → w1 (D x D) → h1 → w2 (D x K) → h2, drawn for D = {d}, K = {k}",
             weight="bold")
    svg.text(20, 44, "each weight matrix costs 2·B·in·out FLOPs forward and twice that backward", size=12,
             fill=MUTED)
    bars = [("forward", forward, ["#6baed6", "#3182bd"], "2·B·P"), ("backward", backward,
            ["#fdae6b", "#fd8d3c", "#e6550d", "#a63603"], "4·B·P")]
    for i, (name, segments, colours, formula) in enumerate(bars):
        y = top + i * 80
        svg.text(20, y + 28, name, weight="bold")
        x = left
        for (label, cost, flops), colour in zip(segments, colours, strict=True):
            width = scale * flops
            svg.rect(x, y, width, bar_h, colour)
            svg.text(x + width / 2, y + 19, label, anchor="middle", size=12, fill="white", weight="bold")
            svg.text(x + width / 2, y + 36, cost, anchor="middle", size=12, fill="white")
            x += width
        svg.text(x + 10, y + 28, formula, weight="bold")
    svg.text(20, top + 2 * 80 + 16,
             "P = D² + D·K parameters; forward 2·B·P + backward 4·B·P = 6·B·P FLOPs per step",
             size=12, fill=MUTED)
    return svg.render("FLOPs of the forward and backward pass of a two-layer linear model")


FIGURES: dict[str, Callable[[], str]] = {
    "float_formats.svg": float_formats,
    "tensor_strides.svg": tensor_strides,
    "training_step_memory.svg": training_step_memory,
    "forward_backward_flops.svg": forward_backward_flops,
}


def stale_figures(root: Path) -> list[str]:
    """Names of figures whose checked-in file is missing or differs from what is drawn now."""
    folder = root / FIGURES_DIR
    return [name for name, draw in FIGURES.items()
            if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != draw()]


def write_figures(root: Path) -> list[Path]:
    """Draw every figure into handout/figures/; the paths written."""
    folder = root / FIGURES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in FIGURES.items():
        (folder / name).write_text(draw(), encoding="utf-8")
        written.append(folder / name)
    return written
