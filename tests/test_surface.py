"""The names real PyTorch programs touch outside the op set (issue 20), each answering as PyTorch's
CPU-only build answers; compared with torch where torch is installed."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn


def test_accelerator_as_cpu_build(torch):
    for name in ("is_available", "current_accelerator", "device_count"):
        assert getattr(ember.accelerator, name)() == getattr(torch.accelerator, name)()
    for name in ("synchronize", "current_device_index", "empty_cache", "memory_allocated"):
        with pytest.raises(RuntimeError, match="none is available") as e:
            getattr(ember.accelerator, name)()
        with pytest.raises(RuntimeError) as t:
            getattr(torch.accelerator, name)()
        assert str(e.value) == str(t.value)


def test_xpu_mps_queries(torch):
    assert ember.xpu.is_available() is torch.xpu.is_available() is False
    assert ember.xpu.device_count() == torch.xpu.device_count() == 0
    with pytest.raises(AssertionError, match="not compiled with XPU"):
        ember.xpu.current_device()
    assert ember.mps.is_available() is False and ember.mps.device_count() == 0
    with pytest.raises(RuntimeError, match="without MPS backend"):
        ember.mps.synchronize()
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available()
    assert ember.backends.mps.is_built() is torch.backends.mps.is_built()


def test_backends_are_importable_submodules_with_flags(torch):
    import ember.backends.cudnn as cudnn
    assert cudnn.is_available() is torch.backends.cudnn.is_available()
    assert cudnn.version() is torch.backends.cudnn.version()
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (
        torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    with pytest.raises(TypeError):
        with cudnn.flags(nonsense=1):
            pass
    cudnn.benchmark = True  # programs set it and move on
    cudnn.benchmark = False
    assert ember.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    ember.backends.cuda.matmul.allow_tf32 = True  # accepted and kept, as PyTorch's CPU build does
    assert ember.backends.cuda.matmul.allow_tf32 is True
    ember.backends.cuda.matmul.allow_tf32 = False  # leave the process as it was (test_config reads it)
    assert ember.backends.mha.get_fastpath_enabled() is True


def test_tensor_device_flags(torch):
    e, t = ember.ones(1), torch.ones(1)
    for name in ("is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_ipu", "is_xla", "is_mtia",
                 "is_vulkan", "is_mkldnn", "is_nested", "is_sparse", "is_sparse_csr", "is_quantized"):
        assert getattr(e, name) == getattr(t, name), name
    assert ember.empty(2, device="meta").is_cpu is False


def test_variable_is_a_tensor_class(torch):
    from ember.autograd import Variable
    x = ember.ones(2)
    assert isinstance(x, Variable) and issubclass(ember.Tensor, Variable) and not isinstance(3, Variable)
    v = Variable(x, requires_grad=True)
    tv = torch.autograd.Variable(torch.ones(2), requires_grad=True)
    assert (v is x) == (tv is torch.ones(2)) and v.requires_grad and not x.requires_grad
    v.data[0] = 5.0
    assert x[0].item() == 5.0                     # the same memory


def test_is_view(torch):
    assert ember.ones(3)._is_view() == torch.ones(3)._is_view() == False  # noqa: E712
    assert ember.ones(3)[1:]._is_view() == torch.ones(3)[1:]._is_view() == True  # noqa: E712
    assert ember.ones(2, 3).t()._is_view()


def test_saved_tensors_on_nodes(torch):
    x = ember.randn(3, requires_grad=True)
    y = ember.randn(3, requires_grad=True)
    z = (x * y).exp().sum()
    exp_node = z.grad_fn.next_functions[0][0]
    mul_node = exp_node.next_functions[0][0]
    assert mul_node._saved_self is x and mul_node._saved_other is y
    np.testing.assert_allclose(exp_node._saved_result.detach().numpy(), (x * y).exp().detach().numpy())
    with pytest.raises(AttributeError):
        z.grad_fn._saved_self          # SumBackward0 saves no input (PyTorch's neither)
    assert ember.randn(2, 3, requires_grad=True).sum(1).grad_fn._saved_dim == \
        torch.randn(2, 3, requires_grad=True).sum(1).grad_fn._saved_dim
    z.backward()
    with pytest.raises(RuntimeError, match="freed"):
        mul_node._saved_self


def test_no_registry_objects_in_namespace():
    bad = [n for n in dir(ember) if not n.startswith("_") and callable(getattr(ember, n))
           and not hasattr(getattr(ember, n), "__name__")]
    assert bad == []
    assert not [n for n in dir(ember) if n.endswith("_op")]
    assert ember.ops.abs_op.__name__ == "abs"


def test_public_names_are_torch_names(torch):
    # ember's own helpers (batching rules, dispatch, op-family modules, nn.functional-only functions)
    # stay out of the top-level namespace: every public name there is a torch.* name
    # (ember's own subpackages, ember.models, ember.cli, ..., are loaded on first use: extras, allowed)
    own = [n for n in dir(ember) if getattr(getattr(ember, n), "__name__", None) == "ember." + n]
    assert [n for n in dir(ember) if not n.startswith("_") and not hasattr(torch, n) and n not in own] == []


def test_index_with_range(torch):
    a, t = ember.arange(12.).reshape(3, 4), torch.arange(12.).reshape(3, 4)
    for idx in (range(2), range(1, 3), (range(2), range(2)), (slice(None), range(0, 4, 2))):
        np.testing.assert_array_equal(a[idx].numpy(), t[idx].numpy())
    a[range(2)] = 0.0
    t[range(2)] = 0.0
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    x = ember.arange(5., requires_grad=True)
    x[range(3)].sum().backward()
    assert x.grad.tolist() == [1, 1, 1, 0, 0]


def test_make_dual_keeps_a_tangent_of_another_float_dtype(torch):
    import ember.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2), ember.ones(2, dtype=ember.float64))
        assert fwAD.unpack_dual(d).tangent.dtype == ember.float64
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(ember.ones(2), ember.ones(2, dtype=ember.int64))


def test_functorch_stateless_api(torch):
    import ember.functorch as functorch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        lin = nn.Linear(2, 3)
        fmodel, params = functorch.make_functional(lin)
        x = ember.randn(4, 2)
        np.testing.assert_allclose(fmodel(params, x).detach().numpy(), lin(x).detach().numpy())
        with pytest.raises(RuntimeError, match="buffers"):
            functorch.make_functional(nn.BatchNorm1d(3))
        fm, p, b = functorch.make_functional_with_buffers(nn.BatchNorm1d(3))
        assert len(p) == 2 and [tuple(x.shape) for x in b] == [(3,), (3,), ()]
        models = [nn.Linear(2, 3) for _ in range(4)]
        fm, ps, bs = functorch.combine_state_for_ensemble(models)
        out = ember.vmap(fm, in_dims=(0, 0, None))(ps, bs, x)
        for i, m in enumerate(models):
            np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.warns(FutureWarning):
        functorch.make_functional(lin)


def test_dynamo_config(torch):
    cfg = ember._dynamo.config
    for k in ("suppress_errors", "cache_size_limit", "verbose", "optimize_ddp", "capture_scalar_outputs"):
        assert getattr(cfg, k) == getattr(torch._dynamo.config, k)
    old = cfg.cache_size_limit
    cfg.cache_size_limit = 64
    assert cfg.cache_size_limit == 64
    cfg.cache_size_limit = old
    with pytest.raises(AttributeError, match="does not exist"):
        cfg.no_such_setting = 1
    assert ember._dynamo.is_compiling() is False
    assert ember._dynamo.disable(len) is len


def test_data_parallel_runs_the_module_in_process(torch):
    lin = nn.Linear(2, 3)
    dp = nn.DataParallel(lin)
    assert list(dp.state_dict()) == list(torch.nn.DataParallel(torch.nn.Linear(2, 3)).state_dict())
    x = ember.randn(5, 2)
    np.testing.assert_array_equal(dp(x).detach().numpy(), lin(x).detach().numpy())
    assert dp.device_ids == [] and dp.module is lin
    with pytest.raises(AssertionError, match="CUDA"):
        nn.DataParallel(lin, device_ids=[0])


def test_modules_at_pytorch_import_paths(torch):
    import ember.nn.modules.activation as act
    import ember.nn.modules.linear as lin
    assert act.MultiheadAttention is nn.MultiheadAttention
    assert issubclass(lin.NonDynamicallyQuantizableLinear, nn.Linear)
    assert type(nn.MultiheadAttention(4, 2).out_proj).__name__ == \
        type(torch.nn.MultiheadAttention(4, 2).out_proj).__name__


def test_unseeded_processes_start_from_different_seeds():
    import subprocess
    import sys
    code = "import ember; print(ember.initial_seed(), ember.rand(1).item())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(3)}
    assert len(outs) == 3


def test_random_sampler_with_replacement_draws_lazily(torch):
    from ember.utils.data import RandomSampler
    ember.manual_seed(5)
    torch.manual_seed(5)
    it = iter(RandomSampler(range(10), replacement=True, num_samples=10 ** 10))
    tit = iter(torch.utils.data.RandomSampler(range(10), replacement=True, num_samples=10 ** 10))
    assert [next(it) for _ in range(100)] == [next(tit) for _ in range(100)]


def test_pickled_modules_and_arrays_keep_working():
    """An array that went through pickle carries an equal but distinct NumPy dtype object; ember
    compares dtypes by identity on hot paths, so such data is viewed with the canonical dtype."""
    import pickle
    m = pickle.loads(pickle.dumps(nn.Sequential(nn.Linear(3, 2), nn.ReLU())))
    assert m(ember.ones(4, 3)).shape == (4, 2)
    a = pickle.loads(pickle.dumps(np.ones((3, 3), np.float32)))
    assert a.dtype is not np.dtype(np.float32)          # (what NumPy's unpickling gives)
    assert (ember.from_numpy(a) @ ember.ones(3)).tolist() == [3.0, 3.0, 3.0]
    assert (ember.as_tensor(a) @ ember.ones(3, 2)).shape == (3, 2)


def test_default_device_as_a_cpu_build(torch):
    assert str(ember.get_default_device()) == str(torch.get_default_device()) == "cpu"
    ember.set_default_device("cpu")
    ember.set_default_device(None)
    assert ember.zeros(2).device == "cpu"
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.set_default_device("cuda")
    with pytest.raises(NotImplementedError, match="device='meta'"):
        ember.set_default_device("meta")


def test_linalg_error_at_pytorchs_names(torch):
    assert ember._C._LinAlgError is ember.linalg.LinAlgError
    assert issubclass(ember.linalg.LinAlgError, RuntimeError) and issubclass(torch.linalg.LinAlgError, RuntimeError)
    with pytest.raises(ember._C._LinAlgError):
        ember.linalg.cholesky(-ember.eye(2))


def test_pin_memory_and_elementwise_python_callables(torch):
    # pin_memory answers as PyTorch's CPU-only build; apply_/map_ run a Python function per element
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="accelerator"):
            lib.ones(2).pin_memory()
        assert lib.ones(2).is_pinned() is False
    for dtype in ("float32", "int64"):
        outs = []
        for lib in (ember, torch):
            x = lib.arange(6, dtype=getattr(lib, dtype)).reshape(2, 3)[:, ::2]  # a strided view
            x.apply_(lambda v: v * 2.7 + 1)
            y = lib.arange(6.).reshape(2, 3)
            y.map_(lib.tensor([1., -2., 3.]), lambda a, b: a * b - 1)
            outs.append((x.numpy().copy(), y.numpy().copy()))
        for e, t in zip(*outs):
            np.testing.assert_array_equal(e, t)
            assert e.dtype == t.dtype
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="requires grad"):
            lib.ones(2, requires_grad=True).apply_(abs)
        with pytest.raises(RuntimeError, match="expanded size"):
            lib.ones(2).map_(lib.ones(3), lambda a, b: a)
        with pytest.raises(TypeError):
            lib.ones(2).apply_(3)


def test_module_bfloat16(torch):
    m = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3)).bfloat16()
    assert m[0].weight.dtype == ember.bfloat16 and m[1].running_mean.dtype == ember.bfloat16
    assert m[1].num_batches_tracked.dtype == ember.int64  # integer buffers stay as they are
    assert m(ember.ones(4, 2, dtype=ember.bfloat16)).dtype == ember.bfloat16
