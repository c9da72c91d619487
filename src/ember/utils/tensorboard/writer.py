"""SummaryWriter: TensorBoard event files written as torch.utils.tensorboard writes them."""
import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _summary as S


def _default_logdir(comment=""):
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs and hyper-parameters to an event file in
    ``log_dir`` (default ``runs/<date>_<host><comment>``) that TensorBoard opens."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        self.log_dir = str(log_dir) if log_dir is not None else _default_logdir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writer = None
        self._sub_writers = {}
        self._open()

    def _open(self):
        os.makedirs(self.log_dir, exist_ok=True)
        self._writer = EventFileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
        if self.purge_step is not None:
            self._writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2",
                                         session_log={"status": 1}))  # SessionLog.START: older events purged
            self.purge_step = None

    def get_logdir(self):
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None):
        if self._writer is None:
            self._open()  # a closed writer reopens, as PyTorch's does
        ev = Event(summary=summary, wall_time=time.time() if walltime is None else float(walltime))
        if global_step is not None:
            ev.step = int(global_step.item() if hasattr(global_step, "item") else global_step)
        (writer or self._writer).add_event(ev)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._add(S.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each entry goes to its own run, ``<log_dir>/<main_tag>_<tag>``, under the tag
        ``main_tag``: TensorBoard then draws them in one chart."""
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            w = self._sub_writers.get(path)
            if w is None:
                os.makedirs(path, exist_ok=True)
                w = self._sub_writers[path] = EventFileWriter(path, self.max_queue, self.flush_secs,
                                                              self.filename_suffix)
            self._add(S.scalar(main_tag, value), global_step, walltime, writer=w)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        self._add(S.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._add(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._add(S.images(tag, img_tensor, dataformats), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._add(S.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The model's graph from an FX symbolic trace (ember has no TorchScript tracer); with
        ``input_to_model`` each node carries its output shape."""
        gd = S.graph(model, input_to_model)
        if verbose:
            print(gd)
        if self._writer is None:
            self._open()
        self._writer.add_event(Event(graph_def=gd.SerializeToString(), wall_time=time.time()))

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """One trial of a hyper-parameter search in its own run (``<log_dir>/<run_name>``, default
        the current time): the hyper-parameters and the final metrics, for TensorBoard's HPARAMS tab."""
        from tensorboard.plugins.hparams import summary_v2 as hp
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
        for k, v in hparam_dict.items():
            if v is not None and not isinstance(v, (bool, int, float, str)):
                raise ValueError(f"add_hparams: the value of hyper-parameter {k!r} must be a bool, number "
                                 f"or string, got {type(v).__name__}")
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(log_dir=run) as w:
            domains = hparam_domain_discrete or {}
            hparams = [hp.HParam(k, hp.Discrete(domains[k]) if k in domains else None) for k in hparam_dict]
            metrics = [hp.Metric(k) for k in metric_dict]
            w._add(hp.hparams_config_pb(hparams, metrics), None, None)
            w._add(hp.hparams_pb({k: v for k, v in hparam_dict.items() if v is not None}), None, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self):
        if self._writer is not None:
            self._writer.flush()
        for w in self._sub_writers.values():
            w.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for w in self._sub_writers.values():
            w.close()
        self._sub_writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
