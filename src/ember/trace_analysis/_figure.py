"""The plotly figure TraceDiff's ``visualize_*_diff`` return (imported only when plotly is
installed: plotly is part of the optional ``trace`` extra)."""
import plotly.graph_objects as go


class TraceDiffFigure(go.Figure):
    """A plotly Figure that a notebook does not draw a second time: ``visualize_*_diff`` with
    ``show_image=True`` shows it (as Holistic Trace Analysis does) and returns it, and the
    returned figure, as a cell's last expression, would otherwise be displayed again."""

    def _ipython_display_(self):
        if getattr(self, "_ember_shown", False):
            object.__setattr__(self, "_ember_shown", False)  # shown once; later: as usual
            return
        super()._ipython_display_()
