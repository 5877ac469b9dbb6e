"""Log-axis tick labels as plain text (dyntools.plots.log_labels): the labels matplotlib's mathtext formatter writes,
the same ticks labelled, without the mathtext parser; every figure dyntools writes gets them."""

import numpy as np
import pytest

from dyntools import plots
from dyntools.plots.log_labels import PlainLogFormatter, plain, plain_log_labels


@pytest.mark.parametrize(("label", "text"), [
    (r"$\mathdefault{10^{-3}}$", "10⁻³"), (r"$\mathdefault{10^{12}}$", "10¹²"), (r"$\mathdefault{10^{0}}$", "10⁰"),
    (r"$\mathdefault{2\times10^{-3}}$", "2×10⁻³"), (r"$\mathdefault{-10^{2}}$", "−10²"),
    (r"$\mathdefault{5.5\times10^{4}}$", "5.5×10⁴"), (r"$\mathdefault{0.5}$", "0.5"), (r"$\mathdefault{0}$", "0"),
    (r"$\mathdefault{-0.5}$", "−0.5"),
    ("", ""), (r"$\alpha$", r"$\alpha$"), ("10", "10")])
def test_a_mathtext_label_reads_the_same_in_plain_text(label, text):
    assert plain(label) == text


def _labels(ax):
    return [[t.get_text() for t in axis.get_ticklabels(which="both")] for axis in (ax.xaxis, ax.yaxis)]


def test_a_figure_keeps_its_labelled_ticks_and_loses_only_the_mathtext():
    from matplotlib.colors import LogNorm

    drawn = []
    for replace in (False, True):
        fig, axes = plots.figure(2)
        axes[0, 0].loglog([1e-5, 3e-2], [2.0, 40.0])                 # decades, and minor labels on the short axis
        image = axes[0, 1].imshow(np.logspace(-3, 1, 12).reshape(3, 4), norm=LogNorm())
        fig.colorbar(image, ax=axes[0, 1])
        if replace:
            assert plain_log_labels(fig) == 6                             # x and y of the log axes, the colour bar's
        fig.canvas.draw()
        drawn.append([_labels(ax) for ax in fig.get_axes()])
        formatters = [type(a.yaxis.get_major_formatter()) for a in fig.get_axes()]
    assert drawn[1] == [[[plain(t) for t in axis] for axis in ax] for ax in drawn[0]]
    assert any("⁻" in t for ax in drawn[1] for axis in ax for t in axis)
    assert not any("$" in t for ax in drawn[1] for axis in ax for t in axis)
    assert formatters.count(PlainLogFormatter) == 2                       # the loglog panel's y, the colour bar's


def test_save_writes_log_axes_without_mathtext(tmp_path):
    fig, axes = plots.figure()
    axes[0, 0].semilogy([1, 2, 3], [1e-4, 1e-2, 1.0])
    axes[0, 0].set_xlabel("step")
    axes[0, 0].set_ylabel("loss")
    plots.save(fig, tmp_path, "curve", formats=("png",))
    assert isinstance(axes[0, 0].yaxis.get_major_formatter(), PlainLogFormatter)
    assert not isinstance(axes[0, 0].xaxis.get_major_formatter(), PlainLogFormatter)   # a linear axis: as it was
