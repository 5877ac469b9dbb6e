"""The figure check (dyntools.plots.check): each defect it claims to find, planted in a small figure, is
found; a clean figure passes; the check is applied where figures are written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dyntools import plots
from dyntools.plots import animate, check


def _clean():
    fig, axes = plots.figure(ncols=2)
    x = np.linspace(0, 1, 50)
    for ax in axes[0]:
        ax.plot(x, x ** 2, label="x²")
        ax.plot(x, x, label="x")
        ax.set_xlabel("x")
        ax.set_ylabel("f(x)")
        ax.legend(loc="best")
    axes[0, 0].set_title("left")
    axes[0, 1].set_title("right")
    return fig, axes


def test_a_clean_figure_passes():
    fig, _ = _clean()
    assert check.figure_problems(fig) == []
    assert check.figure_problems(fig, cropped=False) == []


def test_an_empty_panel_is_found_and_a_note_makes_it_honest():
    fig, axes = _clean()
    ax = axes[0, 1]
    ax.clear()
    ax.set_title("diverged run")
    ax.set_xlabel("x")
    ax.set_ylabel("f(x)")
    ax.plot([0.0, 1.0], [np.nan, np.nan])                 # a line of NaN: nothing to see
    problems = check.figure_problems(fig)
    assert any("'diverged run' has no data" in p for p in problems), problems
    ax.text(0.5, 0.5, "diverged at step 12", transform=ax.transAxes, ha="center")
    assert check.figure_problems(fig) == [                  # ±0.04 ticks around nothing read as a scale
        "panel 'diverged run' has no data but shows ticks (ax.set_axis_off(), keep the note)"]
    ax.set_axis_off()
    assert check.figure_problems(fig) == []


def test_a_single_point_without_marker_and_a_reference_line_are_no_data():
    fig, axes = plots.figure()
    ax = axes[0, 0]
    ax.plot([0.5], [0.5])                                   # one point, no marker: invisible
    ax.axhline(0.3)                                         # a threshold is not data
    ax.set_xlabel("a")
    ax.set_ylabel("b")
    assert any("has no data" in p for p in check.figure_problems(fig))
    ax.plot([0.5], [0.5], "o")
    assert check.figure_problems(fig) == []


def test_data_outside_the_view_is_no_data():
    fig, axes = plots.figure()
    ax = axes[0, 0]
    ax.plot([0, 1], [5, 6])
    ax.set_ylim(-0.03, 0.03)
    ax.set_xlabel("a")
    ax.set_ylabel("b")
    assert any("has no data" in p for p in check.figure_problems(fig))


def test_an_unlabelled_axis_and_colorbar_are_found():
    fig, axes = plots.figure()
    ax = axes[0, 0]
    mesh = ax.pcolormesh(np.arange(12.0).reshape(3, 4))
    ax.set_xlabel("column")
    cbar = fig.colorbar(mesh, ax=ax)
    problems = check.figure_problems(fig)
    assert "panel with label 'column' has no y-label" in problems and "a colorbar has no label" in problems, problems
    ax.set_ylabel("row")
    cbar.set_label("value")
    assert check.figure_problems(fig) == []


def test_a_clipped_title_is_found_in_an_uncropped_frame():
    fig, axes = _clean()
    axes[0, 0].set_title("a title far too long for its panel " * 4)
    assert check.figure_problems(fig) == [] or all("overlaps" in p for p in check.figure_problems(fig))
    assert any("cut by the edge" in p for p in check.figure_problems(fig, cropped=False))


def test_overlapping_texts_are_found():
    fig, axes = _clean()
    ax = axes[0, 0]
    ax.set_xticks(np.linspace(0, 1, 60))                     # crowded tick labels
    problems = check.figure_problems(fig)
    assert any("x-tick label" in p and "overlaps" in p for p in problems), problems


def test_a_legend_over_the_data_is_found_and_best_passes():
    fig, axes = plots.figure()
    ax = axes[0, 0]
    x = np.linspace(0, 1, 400)
    ax.plot(x, 1 - x, label="falling")
    ax.scatter(x[:40], 1 - x[:40], s=4, label="points")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(loc="upper left")                              # right on the data
    assert any("legend of panel" in p and "covers" in p for p in check.figure_problems(fig))
    ax.legend(loc="upper right")                             # the empty corner
    assert check.figure_problems(fig) == []


@pytest.mark.parametrize("field", ["imshow", "pcolormesh", "contourf"])
def test_a_legend_over_an_image_or_mesh_is_found(field):
    fig, axes = plots.figure()
    ax = axes[0, 0]
    getattr(ax, field)(np.random.default_rng(0).random((8, 8)))
    ax.plot([1, 2], [1, 2], "o", label="best cell")
    ax.set_xlabel("λ")
    ax.set_ylabel("lr")
    ax.legend(loc="lower left")
    assert any("legend of panel" in p and "px of the data" in p for p in check.figure_problems(fig))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2))          # under the panel
    assert check.figure_problems(fig) == []


def _gif(tmp_path, width, draw_empty_first=False):
    fig, axes = plots.figure(width=width, height=2.5)
    ax = axes[0, 0]
    x = np.linspace(0, 1, 20)
    (line,) = ax.plot([], [])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")

    def draw(i):
        k = i + (0 if draw_empty_first else 2)
        line.set_data(x[:k], x[:k] ** 2)

    return lambda dpi=None: animate.write_gif(fig, draw, 6, tmp_path / "a.gif", dpi=dpi)


def test_gif_frames_are_wide_enough_and_the_check_sees_an_empty_first_frame(tmp_path, monkeypatch):
    monkeypatch.setenv(check.ENV, "strict")
    _gif(tmp_path, 3.0)()                                      # raised to 600 px: passes
    from PIL import Image

    assert Image.open(tmp_path / "a.gif").size[0] >= check.MIN_GIF_WIDTH
    with pytest.raises(check.FigureDefect, match="px wide"):
        _gif(tmp_path, 3.0)(dpi=90)
    with pytest.raises(check.FigureDefect, match="frame 0: panel .* has no data"):
        _gif(tmp_path, 3.0, draw_empty_first=True)()


def test_save_applies_the_setting(tmp_path, monkeypatch):
    fig, axes = plots.figure()
    axes[0, 0].set_title("nothing here")
    monkeypatch.setenv(check.ENV, "strict")
    with pytest.raises(check.FigureDefect, match="'empty'.*'nothing here' has no data"):
        plots.save(fig, tmp_path / "strict", "empty", ("png",))
    assert not (tmp_path / "strict" / "empty.png").exists()
    log = tmp_path / "figures.jsonl"
    monkeypatch.setenv(check.ENV, str(log))
    plots.save(fig, tmp_path / "logged", "empty", ("png",))
    entry = json.loads(log.read_text().splitlines()[0])
    assert entry["figure"] == "empty" and entry["problems"]
    monkeypatch.delenv(check.ENV)
    assert plots.save(fig, tmp_path / "off", "empty", ("png",))      # a user's figure is never refused


def test_collect_gathers_every_checked_figure(tmp_path, monkeypatch):
    monkeypatch.delenv(check.ENV, raising=False)
    fig, axes = plots.figure()
    axes[0, 0].set_title("nothing here")
    with check.collect() as found:
        plots.save(fig, tmp_path, "empty", ("png",))
    assert found and found[0][0] == "empty" and any("has no data" in p for p in found[0][1])
    plots.save(fig, tmp_path, "outside", ("png",))                 # outside the block: not checked
    assert len(found) == 1


@pytest.mark.parametrize("checked", [True, False])
def test_save_writes_every_file_with_the_layout_it_checked(tmp_path, monkeypatch, checked):
    """savefig(bbox_inches="tight") would lay a constrained figure out again for every file (a measuring pass,
    then the draw); save() writes each file with the layout of its last draw (the legend passes' or the check's,
    else one pass without rendering) and the crop of that draw, and gives the figure its engine back. Each file is
    one draw: savefig draws a figure that has a layout engine (the "none" placeholder too) once more first."""
    if checked:
        monkeypatch.setenv(check.ENV, "strict")
    else:
        monkeypatch.delenv(check.ENV, raising=False)
    fig, axes = _clean()
    fig.colorbar(axes[0, 1].imshow(np.eye(3), extent=(0, 1, 0, 1)), ax=axes[0, 1], label="value")
    engine = fig.get_layout_engine()
    layouts, in_savefig = [], []
    run = type(engine).execute
    monkeypatch.setattr(type(engine), "execute", lambda self, f: layouts.append(1) or run(self, f))
    original = fig.savefig

    draws = []
    draw = type(fig).draw
    monkeypatch.setattr(type(fig), "draw", lambda self, renderer: draws.append(1) or draw(self, renderer))

    def savefig(*args, **kwargs):
        before = (len(layouts), check.axes_positions(fig), len(draws))
        original(*args, **kwargs)
        in_savefig.append((len(layouts) - before[0], np.array_equal(check.axes_positions(fig), before[1]),
                           len(draws) - before[2]))

    monkeypatch.setattr(fig, "savefig", savefig)
    paths = plots.save(fig, tmp_path, "once", ("png", "pdf"))
    assert layouts and in_savefig == [(0, True, 1), (0, True, 1)]      # laid out before, one draw per file
    assert fig.get_layout_engine() is engine
    from PIL import Image

    width, height = Image.open(paths[0]).size
    box = plots.tight_box(fig)
    assert abs(width - box.width * 200) <= 2 and abs(height - box.height * 200) <= 2


def test_tick_labels_beyond_a_log_axis_view_are_not_counted():
    """A log axis's locator also returns a decade beyond the view (1e-10 under a view starting at 1.5e-8);
    that label is not drawn, so it overlaps nothing. The view test runs on the axis's scale: a slack taken
    in data units (1e-9 × 22.5) once let it in, and matplotlib 3.8's layout put a figure legend over it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from dyntools import plots as P
    from dyntools.plots.check import _drawn_ticklabels

    fig, axes = P.figure(ncols=1, nrows=1)
    ax = axes[0][0]
    ax.plot([1.0, 2.0], [1e-7, 10.0])
    ax.set_yscale("log")
    ax.set_ylim(1.5e-8, 22.5)
    FigureCanvasAgg(fig).draw()
    assert any(loc < 1.5e-8 for loc in ax.yaxis.get_majorticklocs())        # the locator's extra decade
    drawn = [t.get_position()[1] for t in _drawn_ticklabels(ax.yaxis)]
    assert drawn and min(drawn) >= 1.5e-8


# ---- what a reader sees: each rule on a planted defect, and its clean twin ----------------------------------

def _panel(**kw):
    fig, axes = plots.figure(**kw)
    ax = axes[0, 0]
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    return fig, ax


def _defects(fig, word, **kw):
    return [p for p in check.figure_problems(fig, **kw) if word in p]


def test_a_legend_over_a_segment_between_two_vertices_is_found():
    """Two vertices far apart: the segment between them runs under the legend, no vertex does."""
    fig, ax = _panel()
    ax.plot([0, 1], [0.9, 0.9], label="plateau")
    ax.plot([0, 1], [0, 0.2], label="rise")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper center")
    assert _defects(fig, "covers"), check.figure_problems(fig)
    ax.legend(loc="center right")
    assert check.figure_problems(fig) == []


def test_a_legend_over_a_filled_band_is_found():
    fig, ax = _panel()
    x = np.linspace(0, 1, 30)
    ax.plot(x, 0.1 + 0 * x, label="median")
    ax.fill_between(x, 0.4 + 0 * x, 0.95 + 0 * x, alpha=0.3, label="band")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")                              # over the band, no line vertex under it
    assert _defects(fig, "covers"), check.figure_problems(fig)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))   # outside the panel
    assert check.figure_problems(fig) == []


def test_a_figure_legend_over_a_panel_is_found():
    fig, ax = _panel()
    x = np.linspace(0, 1, 50)
    ax.plot(x, x, label="x")
    ax.plot(x, 1 - x, label="1 - x")
    fig.legend(loc="center")
    assert _defects(fig, "figure legend covers"), check.figure_problems(fig)
    fig.legends.clear()
    fig.legend(loc="outside right upper")
    assert check.figure_problems(fig) == []


def test_a_curve_drawn_under_the_same_data_is_hidden():
    fig, ax = _panel()
    x = np.linspace(0, 1, 100)
    ax.plot(x, np.exp(-3 * x), label="constant")
    ax.plot(x, np.exp(-3 * x), label="cosine")              # the same data on top
    ax.legend(loc="upper right")
    assert _defects(fig, "'constant'") and "hidden" in _defects(fig, "'constant'")[0]
    ax.lines[1].set_data(x, np.exp(-3 * x) + 0.2)              # different data: both visible
    assert check.figure_problems(fig) == []


def test_a_curve_visible_only_after_its_split_passes():
    """Identical up to a decay, then apart: not hidden (≥ 5 % of it shows)."""
    fig, ax = _panel()
    x = np.linspace(0, 1, 200)
    ax.plot(x, 1 - x, label="step decay")
    ax.plot(x, np.where(x < 0.5, 1 - x, 0.5 - 0.2 * (x - 0.5)), label="no decay")
    ax.legend(loc="upper right")
    assert _defects(fig, "hidden") == []


def test_text_on_a_spine_is_found():
    fig, ax = _panel()
    ax.plot([0, 1], [0, 1])
    ax.text(0.5, 1.0, "rank 12", transform=ax.transAxes, ha="center", va="center")     # on the top edge
    assert _defects(fig, "top edge"), check.figure_problems(fig)
    ax.texts[0].set_position((0.5, 0.9))
    assert check.figure_problems(fig) == []
    ax.spines["top"].set_visible(True)                         # a legend across a drawn spine
    ax.plot([0, 1], [1, 0], label="fall")
    ax.legend(loc="lower left", bbox_to_anchor=(0.3, 0.9))
    assert _defects(fig, "top spine"), check.figure_problems(fig)


@pytest.mark.parametrize("text", ["eta_t", "phi_theta(X)", "lr 10^-3", "x^2"])
def test_a_literal_underscore_or_caret_is_found(text):
    fig, ax = _panel()
    ax.plot([0, 1], [0, 1], label=text)
    ax.legend(loc="upper left")
    assert _defects(fig, "literal"), check.figure_problems(fig)
    for clean in (f"${text}$", "ηₜ", "a_ b", "lr 1e-3"):
        ax.legend(labels=[clean], loc="upper left")
        assert _defects(fig, "literal") == [], clean


@pytest.mark.parametrize("where", ["title", "xlabel", "note", "ticks"])
def test_a_literal_subscript_anywhere_is_found(where):
    fig, ax = _panel()
    ax.plot([0, 1], [0, 1])
    if where == "title":
        ax.set_title("learning rate eta_t")
    elif where == "xlabel":
        ax.set_xlabel("rank of phi_theta")
    elif where == "note":
        ax.text(0.1, 0.8, "w_1 = 0", transform=ax.transAxes)
    else:
        ax.set_xticks([0, 1], ["sgd_own", "gd"])
    assert _defects(fig, "literal"), check.figure_problems(fig)


def test_a_figure_using_a_third_of_its_canvas_is_found():
    fig, ax = _panel(width=9.0, height=3.0)
    ax.plot([0, 1], [0, 1])
    ax.set_position([0.05, 0.1, 0.2, 0.3])                   # a small panel in a large canvas
    fig.set_layout_engine("none")
    assert _defects(fig, "of the canvas", cropped=False), check.figure_problems(fig, cropped=False)
    fig2, ax2 = _panel()
    ax2.plot([0, 1], [0, 1])
    assert check.figure_problems(fig2, cropped=False) == []


def test_contours_on_a_coarse_grid_are_found():
    rng = np.random.default_rng(1)
    fig, ax = _panel()
    ax.contour(rng.random((4, 6)), levels=[0.5])
    assert _defects(fig, "4×6 grid"), check.figure_problems(fig)
    fig, ax = _panel()
    ax.contour(rng.random((8, 12)), levels=[0.5])
    assert check.figure_problems(fig) == []


def test_a_drawn_style_without_a_legend_entry_is_found():
    fig, ax = _panel()
    x = np.linspace(0, 1, 40)
    ax.plot(x, x, label="SGD")
    ax.plot(x, x ** 2, ":", color="grey")                   # dotted, in no legend entry
    ax.legend(loc="upper left")
    assert _defects(fig, "linestyle ':'"), check.figure_problems(fig)
    ax.lines[1].set_label("theory")
    ax.legend(loc="upper left")
    assert check.figure_problems(fig) == []


def test_title_counts_are_checked():
    fig, ax = _panel()
    x = np.linspace(0, 1, 40)
    lines = [ax.plot(x, x ** k)[0] for k in (1, 2, 3)]
    ax.set_title("loss, 1 seeds")
    assert _defects(fig, "'1 seeds'"), check.figure_problems(fig)
    ax.set_title("loss, 1 seed")
    assert check.figure_problems(fig) == []
    check.declare_count(ax, "seeds", lines)
    ax.set_title("loss, 5 seeds")
    assert _defects(fig, "says '5 seeds' but 3 are drawn"), check.figure_problems(fig)
    ax.set_title("loss, 3 seeds")
    assert check.figure_problems(fig) == []
    ax.set_title("loss, 11 seeds and 0.1 runs")           # no declared count of runs, 11 is plural
    check.declare_count(ax, "seeds", [])
    assert _defects(fig, "'11 seeds'") and not _defects(fig, "'1 seeds'")


def test_gif_axes_that_move_between_frames_are_found(tmp_path, monkeypatch):
    assert check.motion_problems([np.zeros((1, 4)), np.zeros((1, 4))]) == []
    moved = check.motion_problems([np.zeros((1, 4)), np.array([[13.0, 0, 13.0, 0]])])
    assert moved and "13 px" in moved[0]
    monkeypatch.setenv(check.ENV, "strict")
    fig, ax = _panel(width=6.0)
    (line,) = ax.plot([0, 1], [0, 1])

    def draw(i):                       # tick labels shrink from 1000 to 1: constrained layout moves the axes
        ax.set_ylim(0, 10.0 ** (3 - i // 2))
        line.set_data([0, 1], [0, 10.0 ** (3 - i // 2)])

    seen = []
    for i in (0, 5):                                         # the planted defect: a layout per frame
        draw(i)
        check._renderer(fig)
        seen.append(check.axes_positions(fig))
    assert "px between frame 0 and frame 1" in check.motion_problems(seen)[0]
    animate.write_gif(fig, draw, 6, tmp_path / "m.gif")     # the writer freezes the first frame's layout: passes


def test_save_places_a_best_legend_on_no_drawn_pixel(tmp_path, monkeypatch):
    """A band across the top and a segment across the middle: matplotlib's 'best' (vertices) may sit on
    them; save() moves the legend to a free place, and a panel full of data gets it outside."""
    monkeypatch.setenv(check.ENV, "strict")
    fig, ax = _panel()
    x = np.array([0.0, 1.0])
    ax.axhspan(0.7, 1.0, alpha=0.2, label="band")
    ax.plot(x, [0.5, 0.5], label="level")
    ax.set_ylim(0, 1)
    ax.legend()                                               # loc="best" by default
    plots.save(fig, tmp_path, "placed", ("png",))
    assert ax.get_legend()._loc != 0
    full, ax2 = _panel()
    ax2.imshow(np.random.default_rng(0).random((8, 8)), aspect="auto")
    ax2.plot([1, 2], [1, 2], "o", label="best cell")
    ax2.legend(loc="best")
    plots.save(full, tmp_path, "outside", ("png",))           # every inside place covers pixels: outside
    box, frame = ax2.get_legend().get_window_extent(), ax2.get_window_extent()
    assert box.x0 >= frame.x1


def test_helpers_that_pass_the_check():
    assert plots.count(1, "seed") == "1 seed" and plots.count(3, "seed") == "3 seeds"
    assert plots.math_label("rising as t^0.5 to 3") == "rising as $t^{0.5}$ to 3"
    assert plots.math_label("v from ∇f_t (both)") == "v from ∇$f_{t}$ (both)"
    assert plots.math_label("sgd_own, $a_b$") == "sgd_own, $a_b$"           # identifiers and mathtext kept


def test_the_threshold_outline_follows_the_cell_edges():
    """Cells (0, 1), (1, 0), (1, 1) of a 2×2 grid pass: the outline is the L-shaped boundary, 8 unit edges,
    and drawing it instead of a contour passes the coarse-grid rule."""
    from dyntools.plots.adamw_heatmaps import cell_outline

    good = np.array([[False, True], [True, True]])
    xs, ys = cell_outline(good, np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]))
    segments = {tuple(map(tuple, np.c_[xs, ys][k:k + 2])) for k in range(0, xs.size, 3)}
    assert len(segments) == 8
    assert ((1.0, 0.0), (1.0, 1.0)) in segments and ((0.0, 1.0), (1.0, 1.0)) in segments   # the notch
    assert ((0.0, 0.0), (1.0, 0.0)) not in segments                                       # the failing cell
    fig, ax = _panel()
    ax.pcolormesh(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]), good.astype(float))
    ax.plot(xs, ys, color="black")
    assert check.figure_problems(fig) == []


def test_an_errorbar_legend_entry_shows_its_line_and_marker():
    """matplotlib draws an errorbar's legend entry as two lines (the stroke, the marker): both count."""
    fig, ax = _panel()
    x = np.array([1.0, 2.0, 3.0])
    ax.errorbar(x, x, yerr=0.1, fmt="^-", label="weak error")
    ax.legend(loc="upper left")
    assert _defects(fig, "no legend entry") == []
    ax.plot(x, x + 1, "s-")                                   # a second marker style, unexplained
    assert _defects(fig, "marker 's'"), check.figure_problems(fig)


def test_a_mathtext_suptitle_passes():
    fig, ax = _panel()
    ax.plot([0, 1], [0, 1])
    fig.suptitle(r"Universal approximation: $g(x) = A + \sum_i v_i\,\sigma(w_i^T x + b_i)$")
    assert check.figure_problems(fig) == []


def test_the_legend_pass_draw_read_by_the_check_finds_what_a_fresh_draw_finds():
    """``plots.save`` hands the check the last draw of :func:`place_legends` when that pass moved nothing: the
    findings are those of a fresh draw, on a clean figure and with defects planted (an axis label gone, a
    title over its neighbour's)."""
    from dyntools.plots.legends import place_legends

    for plant in (None, "label", "title"):
        fig, axes = _clean()
        if plant == "label":
            axes[0, 1].set_ylabel("")
        if plant == "title":
            axes[0, 0].set_title("a very long title " * 6)
        drawn = place_legends(fig)
        assert drawn is not None                    # two clean panels: the second pass moves nothing
        found = check.figure_problems(fig, renderer=drawn)
        assert found == check.figure_problems(fig)
        assert bool(found) == (plant is not None), found
