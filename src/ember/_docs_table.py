"""The docstring table of ember._docs (see there).

``SUMMARIES``: ``name: one line`` for each public function over the registry, keyed by its name in
``ember`` (``special.x``, ``fft.x`` for those namespaces), ``Tensor.x`` for a Tensor method, or
``ember.ops.family:x`` for a function that only ``ember.nn.functional`` exposes. ``DIFFERENCES``:
for the same keys, what differs from PyTorch's CPU behaviour (each checked by running both); a key
appears there only where something does. A line that starts with spaces continues the one above.
"""

SUMMARIES = """
abs: Absolute value, elementwise (the modulus for complex input).
acos: Arccosine, elementwise.
acosh: Inverse hyperbolic cosine, elementwise.
add: input + alpha * other, with broadcasting and type promotion.
addcdiv: input + value * tensor1 / tensor2.
addcmul: input + value * tensor1 * tensor2.
allclose: Whether every element satisfies abs(input - other) <= atol + rtol * abs(other) (a Python bool).
asin: Arcsine, elementwise.
asinh: Inverse hyperbolic sine, elementwise.
atan: Arctangent, elementwise.
atan2: The angle of the point (other, input), elementwise, in (-pi, pi].
atanh: Inverse hyperbolic tangent, elementwise.
bitwise_and: Bitwise AND of integer or Boolean tensors.
bitwise_left_shift: input shifted left by other bits.
bitwise_not: Bitwise NOT of an integer or Boolean tensor.
bitwise_or: Bitwise OR of integer or Boolean tensors.
bitwise_right_shift: input shifted right by other bits (arithmetic shift for signed types).
bitwise_xor: Bitwise XOR of integer or Boolean tensors.
ceil: The smallest integer not less than each element.
clip: clamp under NumPy's name.
clamp: Limit each element to [min, max] (numbers or tensors).
clamp_max: min(input, max), elementwise.
clamp_min: max(input, min), elementwise.
cos: Cosine, elementwise.
cosh: Hyperbolic cosine, elementwise.
div: input / other (true division; rounding_mode 'trunc' or 'floor').
eq: input == other, elementwise (a Boolean tensor).
equal: Whether two tensors have the same shape and elements (a Python bool).
erf: The error function, elementwise.
erfinv: The inverse error function, elementwise.
exp: e ** x, elementwise.
exp2: 2 ** x, elementwise.
expm1: exp(x) - 1, accurate near 0.
fix: trunc under its other name: round towards zero.
float_power: input ** exponent computed in float64 (complex128 for complex input).
floor: The largest integer not greater than each element.
floor_divide: input / other rounded towards minus infinity.
fmod: The remainder of input / other with the sign of input (C's fmod).
frac: The fractional part, x - trunc(x).
ge: input >= other, elementwise.
gt: input > other, elementwise.
hypot: sqrt(input ** 2 + other ** 2), elementwise, without overflow.
isclose: abs(input - other) <= atol + rtol * abs(other), elementwise (equal_nan).
isfinite: Whether each element is finite.
isinf: Whether each element is +inf or -inf.
isnan: Whether each element is NaN.
le: input <= other, elementwise.
lerp: input + weight * (end - input).
lt: input < other, elementwise.
log: Natural logarithm, elementwise.
log10: Base-10 logarithm, elementwise.
log1p: log(1 + x), accurate near 0.
log2: Base-2 logarithm, elementwise.
logaddexp: log(exp(input) + exp(other)), computed stably.
logical_and: Elementwise logical AND (nonzero is true).
logical_not: Elementwise logical NOT (nonzero is true).
logical_or: Elementwise logical OR (nonzero is true).
logical_xor: Elementwise logical XOR (nonzero is true).
logit: log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given.
maximum: The larger of input and other, elementwise (NaN propagates).
minimum: The smaller of input and other, elementwise (NaN propagates).
mul: input * other, with broadcasting and type promotion.
nan_to_num: Replace NaN, +inf and -inf by nan, posinf and neginf (default: 0 and the dtype's extremes).
ne: input != other, elementwise.
neg: -x, elementwise.
pow: input ** exponent (tensors or numbers).
reciprocal: 1 / x, elementwise.
relu: max(0, x), elementwise.
remainder: The remainder of input / other with the sign of other (Python's %).
round: Round to the nearest integer (half to even), or to decimals digits.
rsqrt: 1 / sqrt(x), elementwise.
sigmoid: The logistic function 1 / (1 + exp(-x)).
sign: The sign of each element (-1, 0 or 1).
sin: Sine, elementwise.
sinh: Hyperbolic sine, elementwise.
sqrt: Square root, elementwise.
square: x * x, elementwise.
sub: input - alpha * other, with broadcasting and type promotion.
tan: Tangent, elementwise.
tanh: Hyperbolic tangent, elementwise.
celu: CELU activation, max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
elu: ELU activation, x for x > 0 and alpha * (exp(x) - 1) otherwise.
gelu: GELU activation, x * Phi(x) (approximate='tanh': the tanh formula).
hardsigmoid: Hard sigmoid, relu6(x + 3) / 6.
hardswish: Hard swish, x * relu6(x + 3) / 6.
hardtanh: Clamp to [min_val, max_val].
leaky_relu: Leaky ReLU, x for x >= 0 and negative_slope * x otherwise.
logsigmoid: log(sigmoid(x)), computed stably.
mish: Mish activation, x * tanh(softplus(x)).
relu6: min(max(0, x), 6).
selu: SELU activation, scale * elu(x, alpha) with the self-normalising constants.
silu: SiLU (swish) activation, x * sigmoid(x).
softplus: log(1 + exp(beta * x)) / beta, linear above threshold.
softsign: x / (1 + abs(x)).
where: Elements of input where condition holds and of other elsewhere (with one argument: nonzero(condition, as_tuple=True)).
as_strided: A view with the given sizes, strides and storage offset.
broadcast_to: A view of input broadcast to a shape.
chunk: Split into the given number of nearly equal chunks along dim (views).
clone: A copy with its own memory (memory_format as given, or preserved).
contiguous: The tensor itself if it is contiguous in memory_format, else a contiguous copy.
diagonal: The diagonal selected by offset, dim1 and dim2, as a view.
expand: A view with size-1 dims repeated to a larger shape (-1 keeps a size).
flatten: Merge dims start_dim..end_dim into one (a view when possible).
flip: Reverse the order of elements along the given dims.
fliplr: Reverse the order of columns (dim 1).
flipud: Reverse the order of rows (dim 0).
movedim: Move dims from source positions to destination positions (a view).
narrow: The slice start:start + length along dim, as a view.
permute: A view with its dims reordered.
ravel: The elements as a 1-D tensor (a view when contiguous).
repeat: The tensor tiled the given number of times along each dim.
repeat_interleave: Each element (or slice along dim) repeated by repeats.
reshape: The same elements in a new shape (a view when possible, a copy otherwise).
roll: Elements shifted circularly along dims (flattened when no dim is given).
rot90: Rotate by 90 degrees k times in the plane of dims.
select: The slice at index along dim, without that dim (a view).
split: Split into chunks of split_size (or of the given sizes) along dim (views).
squeeze: Remove dims of size 1 (all of them, or those given).
sum_to_size: Sum broadcast dims away to reach a shape.
swapaxes: transpose under NumPy's name.
t: The transpose of a tensor of at most 2 dims.
tensor_split: Split into sections (a number or indices) along dim, as views.
tril: The lower triangle (below diagonal offset), the rest zero.
triu: The upper triangle (above diagonal offset), the rest zero.
unbind: The slices along dim, as a tuple of views without that dim.
unflatten: Split dim into the given sizes.
unsqueeze: A view with a dim of size 1 inserted at dim.
view: A view with a new shape (or dtype) over the same memory.
as_strided_backward_rule: ember internal, not a torch name: the vmap batching rule of the as_strided backward.
as_strided_scatter_rule: ember internal, not a torch name: the vmap batching rule of as_strided_scatter.
broadcast_shapes: The shape the given shapes broadcast to.
broadcast_tensors: The tensors broadcast to one shape (views).
cat: Concatenate tensors along an existing dim.
cat_rule: ember internal, not a torch name: the vmap batching rule of cat.
column_stack: Stack 1-D tensors as columns (2-D ones side by side).
constant_pad: ember internal, not a torch name: pad the trailing dims with a constant (constant_pad_nd's kernel).
dstack: Stack along the third dim (depth-wise).
expand_rule: ember internal, not a torch name: the vmap batching rule of expand.
hstack: Stack horizontally (along dim 1, or dim 0 for 1-D tensors).
permute_rule: ember internal, not a torch name: the vmap batching rule of permute.
repeat_rule: ember internal, not a torch name: the vmap batching rule of repeat.
stack: Stack tensors of one shape along a new dim.
to_dtype: ember internal, not a torch name: the dtype conversion primitive behind Tensor.to(dtype).
view_dtype: ember internal, not a torch name: Tensor.view(dtype), the same bytes read as another dtype.
view_rule: ember internal, not a torch name: the vmap batching rule of view.
vstack: Stack vertically (along dim 0, 1-D tensors as rows).
digamma: The digamma function, the derivative of lgamma.
erfc: The complementary error function 1 - erf(x).
i0: The modified Bessel function of the first kind, order 0.
igamma: The regularised lower incomplete gamma function P(input, other).
igammac: The regularised upper incomplete gamma function Q(input, other).
lgamma: The log of the absolute value of the gamma function.
sinc: The normalised sinc, sin(pi x) / (pi x) (1 at 0).
polygamma: The n-th derivative of the digamma function.
special.airy_ai: The Airy function Ai.
special.bessel_j0: The Bessel function of the first kind, order 0.
special.bessel_j1: The Bessel function of the first kind, order 1.
special.bessel_y0: The Bessel function of the second kind, order 0.
special.bessel_y1: The Bessel function of the second kind, order 1.
special.chebyshev_polynomial_t: The Chebyshev polynomial of the first kind T_n(x).
special.chebyshev_polynomial_u: The Chebyshev polynomial of the second kind U_n(x).
special.chebyshev_polynomial_v: The Chebyshev polynomial of the third kind V_n(x).
special.chebyshev_polynomial_w: The Chebyshev polynomial of the fourth kind W_n(x).
special.entr: The entropy term -x log(x) (0 at 0, -inf for negative x).
special.erfcx: The scaled complementary error function exp(x^2) erfc(x).
special.hermite_polynomial_h: The physicists' Hermite polynomial H_n(x).
special.hermite_polynomial_he: The probabilists' Hermite polynomial He_n(x).
special.i0e: The exponentially scaled modified Bessel function exp(-abs(x)) I0(x).
special.i1: The modified Bessel function of the first kind, order 1.
special.i1e: The exponentially scaled modified Bessel function exp(-abs(x)) I1(x).
special.laguerre_polynomial_l: The Laguerre polynomial L_n(x).
special.legendre_polynomial_p: The Legendre polynomial P_n(x).
special.log_ndtr: The log of the standard normal cumulative distribution function, accurate in the tails.
special.modified_bessel_i0: The modified Bessel function of the first kind, order 0.
special.modified_bessel_i1: The modified Bessel function of the first kind, order 1.
special.modified_bessel_k0: The modified Bessel function of the second kind, order 0.
special.modified_bessel_k1: The modified Bessel function of the second kind, order 1.
special.ndtr: The standard normal cumulative distribution function.
special.ndtri: The inverse of the standard normal cumulative distribution function.
special.scaled_modified_bessel_k0: exp(x) K0(x).
special.scaled_modified_bessel_k1: exp(x) K1(x).
special.shifted_chebyshev_polynomial_t: The shifted Chebyshev polynomial of the first kind, T_n(2x - 1).
special.shifted_chebyshev_polynomial_u: The shifted Chebyshev polynomial of the second kind, U_n(2x - 1).
special.shifted_chebyshev_polynomial_v: The shifted Chebyshev polynomial of the third kind, V_n(2x - 1).
special.shifted_chebyshev_polynomial_w: The shifted Chebyshev polynomial of the fourth kind, W_n(2x - 1).
special.spherical_bessel_j0: The spherical Bessel function of the first kind, order 0.
special.xlog1py: x * log1p(y), 0 where x is 0.
special.zeta: The Hurwitz zeta function zeta(x, q).
as_strided_scatter: A copy of input with src written into the as_strided view.
diagflat: A 2-D matrix with the flattened input on diagonal offset.
diagonal_scatter: A copy of input with src written into a diagonal.
dsplit: Split along the third dim (depth-wise).
hsplit: Split horizontally (along dim 1, or dim 0 for 1-D tensors).
select_scatter: A copy of input with src written into the slice at index along dim.
slice_scatter: A copy of input with src written into the slice start:end:step along dim.
split_with_sizes: Split into chunks of the given sizes along dim.
unsafe_chunk: chunk (PyTorch's variant without view tracking; here the same views).
unsafe_split: split (PyTorch's variant without view tracking; here the same views).
unsafe_split_with_sizes: split_with_sizes (PyTorch's variant without view tracking; here the same views).
vsplit: Split vertically (along dim 0).
alias_copy: A copy of input (the copy variant of an alias).
as_strided_copy: A copy of as_strided's view.
atleast_1d: Each input with at least 1 dim.
atleast_2d: Each input with at least 2 dims.
atleast_3d: Each input with at least 3 dims.
combinations: The length-r combinations of a 1-D tensor's elements, as rows (with_replacement).
constant_pad_nd: Pad the trailing dims with a constant (pad lists (left, right) pairs from the last dim).
diagonal_copy: A copy of diagonal's view.
expand_copy: A copy of expand's view.
narrow_copy: A copy of narrow's view.
permute_copy: A copy of permute's view.
select_copy: A copy of select's view.
slice_copy: A copy of the slice start:end:step along dim.
split_copy: Copies of split's views.
split_with_sizes_copy: Copies of split_with_sizes' views.
squeeze_copy: A copy of squeeze's view.
t_copy: A copy of t's view.
transpose_copy: A copy of transpose's view.
unbind_copy: Copies of unbind's views.
unfold_copy: A copy of Tensor.unfold's view.
unravel_index: Flat indices converted to coordinate tensors for a shape.
unsqueeze_copy: A copy of unsqueeze's view.
values_copy: A copy of the values (for a dense tensor: the tensor).
view_copy: A copy of view's result.
argsort: The indices that sort input along dim (options stable and descending).
argwhere: The indices of the nonzero elements, one row per element.
bincount: The count of each value in a 1-D non-negative integer tensor (or the sum of weights).
gather: Values of input at index along dim.
index_add: input with alpha * source added at index along dim.
index_fill: input with value written at index along dim.
index_put: input with values written at the positions of a tuple of index tensors (accumulate adds).
index_select: The slices of input at index along dim.
kthvalue: The k-th smallest value along dim, and its index.
masked_fill: input with value where mask is true.
masked_scatter: input with the elements of source written, in order, where mask is true.
masked_select: The elements of input where mask is true, as a 1-D tensor.
median: The median (the lower of the two middle values), overall or along dim with its index.
msort: Sort along dim 0.
nonzero: The indices of the nonzero elements (a tuple of 1-D tensors with as_tuple).
scatter: input with src (or value) written at index along dim (reduce 'add' or 'multiply').
scatter_add: input with src added at index along dim.
sort: The sorted values along dim and their indices (options stable and descending).
take: The elements at flat indices, as if input were 1-D.
take_along_dim: The values of input at indices along dim (gather with broadcasting).
topk: The k largest (or smallest) values along dim and their indices.
unique: The unique elements (sorted), with inverse indices and counts on request.
bucketize: The index of the bucket of boundaries each value falls in.
getitem: ember internal, not a torch name: Tensor.__getitem__ (basic and advanced indexing).
index_add_rule: ember internal, not a torch name: the vmap batching rule of index_add.
index_backward_rule: ember internal, not a torch name: the vmap batching rule of the indexing backward.
index_select_rule: ember internal, not a torch name: the vmap batching rule of index_select.
masked_fill_rule: ember internal, not a torch name: the vmap batching rule of masked_fill.
nonzero_rule: ember internal, not a torch name: the vmap batching rule of nonzero.
searchsorted: The indices where values would be inserted into sorted_sequence to keep it sorted.
setitem: ember internal, not a torch name: Tensor.__setitem__ (basic and advanced indexing).
all: Whether every element (along dim) is nonzero.
amax: The maximum along dims (gradient shared equally among ties).
amin: The minimum along dims (gradient shared equally among ties).
aminmax: The minimum and maximum (along dim), as (min, max).
any: Whether any element (along dim) is nonzero.
argmax: The index of the maximum (over the flattened tensor, or along dim).
argmin: The index of the minimum (over the flattened tensor, or along dim).
count_nonzero: The number of nonzero elements (along dims).
cumprod: The cumulative product along dim.
cumsum: The cumulative sum along dim.
dist: The p-norm of input - other.
log_softmax: log(softmax(x)) along dim, computed stably.
logsumexp: log(sum(exp(x))) along dims, computed stably.
max: The maximum (overall; along dim with its index; or elementwise with a second tensor).
mean: The mean (overall or along dims) of a floating or complex tensor.
min: The minimum (overall; along dim with its index; or elementwise with a second tensor).
nanmean: The mean ignoring NaN.
nansum: The sum treating NaN as 0.
norm: The p-norm (vector or matrix, 'fro', 'nuc') of input, overall or along dims.
prod: The product (overall or along dim).
softmax: exp(x) / sum(exp(x)) along dim, computed stably.
std: The standard deviation (correction: 1 is Bessel's).
sum: The sum (overall or along dims).
var: The variance (correction: 1 is Bessel's).
std_mean: std and mean together.
var_mean: var and mean together.
addbmm: beta * input + alpha * the sum of the batched products batch1[i] @ batch2[i].
addmm: beta * input + alpha * (mat1 @ mat2).
addmv: beta * input + alpha * (mat @ vec).
addr: beta * input + alpha * the outer product of vec1 and vec2.
baddbmm: beta * input + alpha * (batch1 @ batch2), per batch.
bmm: Batched matrix product of (b, n, m) and (b, m, p).
cross: The cross product of 3-vectors along dim (the first dim of size 3 when none is given).
diag: The diagonal of a matrix as a vector, or a vector as a diagonal matrix.
diag_embed: Matrices with the last dim of input on a diagonal.
dot: The dot product of two 1-D tensors.
ger: The outer product (outer's old name).
outer: The outer product of two 1-D tensors.
kron: The Kronecker product.
matmul: Matrix product with NumPy's broadcasting rules (vectors, matrices, batches).
mm: The product of two matrices.
mv: The product of a matrix and a vector.
trace: The sum of a matrix's diagonal.
bilinear: y = x1^T A x2 + b.
einsum: Einstein summation over the operands by an equation ('ij,jk->ik').
einsum_rule: ember internal, not a torch name: the vmap batching rule of einsum.
linear: y = x A^T + b.
linear_rule: ember internal, not a torch name: the vmap batching rule of linear.
matmul_rule: ember internal, not a torch name: the vmap batching rule of matmul.
tensordot: Contract a over its last dims with b over its first dims (or the dims given).
fft.fft: The 1-D discrete Fourier transform.
fft.ifft: The 1-D inverse discrete Fourier transform.
fft.fft2: The 2-D discrete Fourier transform.
fft.ifft2: The 2-D inverse discrete Fourier transform.
fft.fftn: The n-D discrete Fourier transform.
fft.ifftn: The n-D inverse discrete Fourier transform.
fft.rfft: The 1-D Fourier transform of real input (the non-negative frequencies).
fft.irfft: The inverse of rfft: real output from the non-negative frequencies.
fft.rfft2: The 2-D Fourier transform of real input.
fft.irfft2: The inverse of rfft2.
fft.rfftn: The n-D Fourier transform of real input.
fft.irfftn: The inverse of rfftn.
fft.hfft: The 1-D Fourier transform of a Hermitian-symmetric signal (real output).
fft.ihfft: The inverse of hfft: the non-negative frequencies of a real signal's inverse transform.
fft.hfft2: The 2-D Fourier transform of a Hermitian-symmetric signal.
fft.ihfft2: The inverse of hfft2.
fft.hfftn: The n-D Fourier transform of a Hermitian-symmetric signal.
fft.ihfftn: The inverse of hfftn.
fft.fftshift: Move the zero frequency to the centre of the given dims.
fft.ifftshift: The inverse of fftshift.
angle: The argument of each element (0 or pi for real input).
conj_physical: The complex conjugate, computed (a copy).
is_conj: Whether the conjugate bit is set (always False: ember conjugates eagerly).
is_neg: Whether the negative bit is set (always False: ember negates eagerly).
isreal: Whether each element has a zero imaginary part.
resolve_conj: input itself (ember has no lazy conjugate bit to resolve).
resolve_neg: input itself (ember has no lazy negative bit to resolve).
sgn: x / abs(x) (0 at 0): the sign extended to complex numbers.
complex: A complex tensor from real and imaginary parts.
imag: The imaginary part, as a view.
is_complex: Whether the dtype is complex.
polar: abs * (cos(angle) + i sin(angle)), a complex tensor.
real: The real part (a view of complex input; real input itself).
view_as_complex: A complex view of a tensor whose last dim of size 2 holds (real, imag).
view_as_real: A real view of a complex tensor, (real, imag) in a new last dim.
sum_to: ember internal, not a torch name: sum a gradient over broadcast dims down to a shape.
copysign: The magnitude of input with the sign of other.
deg2rad: Degrees to radians.
frexp: Mantissa and exponent: input = mantissa * 2 ** exponent.
gcd: The greatest common divisor, elementwise.
isneginf: Whether each element is -inf.
isposinf: Whether each element is +inf.
lcm: The least common multiple, elementwise.
nextafter: The next floating-point value after input towards other.
positive: input itself (unary +).
rad2deg: Radians to degrees.
corrcoef: The Pearson correlation coefficients of the rows of a matrix.
cummax: The running maximum along dim and its indices.
cummin: The running minimum along dim and its indices.
nanquantile: quantile ignoring NaN.
signbit: Whether the sign bit of each element is set (True for -0.0).
block_diag: A block-diagonal matrix of the given tensors.
cartesian_prod: The Cartesian product of 1-D tensors, as rows.
grid_sampler: grid_sample's primitive for 4-D input (interpolation and padding modes as integers).
grid_sampler_3d: grid_sample's primitive for 5-D input.
native_batch_norm: Batch normalisation returning (output, saved mean, saved inverse std).
native_dropout_backward: The gradient of native dropout: grad * mask * scale.
native_group_norm: Group normalisation returning (output, mean, inverse std).
native_layer_norm: Layer normalisation returning (output, mean, inverse std).
special.log_softmax: log_softmax (with dtype).
special.softmax: softmax (with dtype).
special.logsumexp: logsumexp.
bartlett_window: The Bartlett (triangular) window.
blackman_window: The Blackman window.
hamming_window: The Hamming window (alpha, beta).
hann_window: The Hann window.
kaiser_window: The Kaiser window (beta).
cumulative_trapezoid: The cumulative trapezoidal integral along dim.
trapezoid: The trapezoidal integral along dim.
trapz: trapezoid's old name.
histc: A histogram with bins equal-width bins over [min, max] (the data's range for 0, 0).
histogram: A histogram (counts or density) and its bin edges.
ops.pool3d:adaptive_avg_pool3d: Average pooling to a given output size over 3 spatial dims.
ops.pool3d:adaptive_max_pool1d: Max pooling to a given output length (return_indices for the argmax).
ops.pool3d:adaptive_max_pool3d: Max pooling to a given output size over 3 spatial dims.
ops.pool3d:avg_pool3d: Average pooling over 3 spatial dims.
ops.pool3d:fractional_max_pool2d: Fractional max pooling over 2 spatial dims (pseudo-random windows).
ops.pool3d:fractional_max_pool3d: Fractional max pooling over 3 spatial dims (pseudo-random windows).
ops.pool3d:max_pool3d: Max pooling over 3 spatial dims.
ops.pool3d:max_pool3d_with_indices: Max pooling over 3 spatial dims, with the argmax indices.
ops.pool3d:max_unpool1d: Partial inverse of max_pool1d: values put back at their indices, zeros elsewhere.
ops.pool3d:max_unpool2d: Partial inverse of max_pool2d: values put back at their indices, zeros elsewhere.
ops.pool3d:max_unpool3d: Partial inverse of max_pool3d: values put back at their indices, zeros elsewhere.
ops.nn:adaptive_avg_pool2d: Average pooling to a given output size.
ops.nn:avg_pool2d: Average pooling over 2 spatial dims.
ops.nn:batch_norm: Batch normalisation (running statistics updated in training).
ops.nn:conv1d: 1-D convolution over (N, C, L) input.
ops.nn:conv2d: 2-D convolution over (N, C, H, W) input.
ops.nn:conv_transpose2d: 2-D transposed convolution.
ops.nn:embedding: The rows of weight at the indices in input (padding_idx, max_norm).
ops.nn:group_norm: Group normalisation over groups of channels.
ops.nn:layer_norm: Layer normalisation over the trailing normalized_shape dims.
ops.nn:max_pool2d: Max pooling over 2 spatial dims.
ops.conv3d:conv3d: 3-D convolution over (N, C, D, H, W) input.
ops.conv3d:conv_transpose1d: 1-D transposed convolution.
ops.conv3d:conv_transpose3d: 3-D transposed convolution.
ops.ctc:ctc_loss: Connectionist temporal classification loss over log-probabilities (T, N, C).
dispatch: ember internal, not a torch name: run one registry op through the dispatch path.
elementwise_rule: ember internal, not a torch name: the vmap batching rule shared by elementwise ops.
_creation:empty_array: ember internal, not a torch name: an uninitialised NumPy array of a dtype.
Tensor: A multi-dimensional array of one dtype, with autograd (the torch.Tensor of ember).
Tensor.bernoulli: 0/1 samples with the probabilities in this tensor (or p).
Tensor.multinomial: num_samples category indices per row, drawn with the probabilities in this tensor.
Tensor.bfloat16: A bfloat16 copy (self when already bfloat16).
Tensor.bool: A bool copy (self when already bool).
Tensor.byte: A uint8 copy.
Tensor.cdouble: A complex128 copy.
Tensor.cfloat: A complex64 copy.
Tensor.char: An int8 copy.
Tensor.double: A float64 copy.
Tensor.float: A float32 copy.
Tensor.half: A float16 copy.
Tensor.int: An int32 copy.
Tensor.long: An int64 copy.
Tensor.short: An int16 copy.
Tensor.cpu: self (tensors live on the CPU).
Tensor.cuda: Refuse: there is no CUDA device.
Tensor.pin_memory: Refuse as PyTorch's CPU-only build does: there is no accelerator to pin memory for.
Tensor.is_pinned: False: there is no accelerator, so no memory is pinned.
Tensor.apply_: Apply a Python function to each element, in place (slow: one Python call per element).
Tensor.map_: Replace each element x of self with callable(x, y), y the matching element of tensor
  (broadcast to self's shape), in place.
Tensor.is_nonzero: The truth value of a one-element tensor.
Tensor.new_empty: An uninitialised tensor with this tensor's dtype (unless given).
Tensor.new_empty_strided: An uninitialised tensor with given sizes and strides, this tensor's dtype.
Tensor.new_full: A tensor filled with fill_value, this tensor's dtype (unless given).
Tensor.new_ones: Ones with this tensor's dtype (unless given).
Tensor.new_tensor: A new tensor from data, this tensor's dtype (unless given).
Tensor.new_zeros: Zeros with this tensor's dtype (unless given).
Tensor.resize_as_: Resize in place to other's shape.
Tensor.to: Convert dtype and/or device ('cpu', 'meta') and/or memory_format; self when nothing changes.
Tensor.type: The type name as a string (no argument), or a copy of another dtype.
Size.numel: The number of elements of a tensor of this shape.
Tensor.backward: Compute the gradient of this tensor with respect to the graph's leaves (accumulated into .grad).
Tensor.data_ptr: The address of the first element.
Tensor.detach: A tensor sharing memory with this one, out of the graph.
Tensor.dim: The number of dims.
Tensor.element_size: The size of one element in bytes.
Tensor.get_device: -1 (the CPU's device index, as PyTorch returns for CPU tensors).
Tensor.is_complex: Whether the dtype is complex.
Tensor.is_contiguous: Whether the elements are contiguous in memory_format.
Tensor.is_floating_point: Whether the dtype is a floating-point one.
Tensor.is_inference: Whether the tensor was created in inference mode.
Tensor.is_signed: Whether the dtype is signed.
Tensor.item: The value of a one-element tensor as a Python number.
Tensor.numel: The number of elements.
Tensor.numpy: A NumPy array sharing memory with the tensor (refused when it requires grad).
Tensor.register_post_accumulate_grad_hook: Register hook(tensor) run after the gradient is accumulated into this leaf.
Tensor.requires_grad_: Set requires_grad (in place); returns self.
Tensor.retain_grad: Keep .grad for this non-leaf tensor in backward.
Tensor.size: The shape (an ember.Size), or one dim's size.
Tensor.storage_offset: The offset of the first element in the storage, in elements.
Tensor.stride: The strides in elements (or one dim's stride).
Tensor.tolist: The elements as nested Python lists.
Tensor.untyped_storage: The storage under the tensor (bytes).
device: A device: 'cpu' or 'meta' (others are named but cannot hold tensors).
Tensor.adjoint: The conjugate transpose of the last two dims.
Tensor.expand_as: expand to other's shape.
Tensor.reshape_as: reshape to other's shape.
Tensor.type_as: A copy with other's dtype (self when it already has it).
Tensor.view_as: view with other's shape.
Tensor.polygamma: polygamma(n, self).
Tensor.lu: The compact LU factorisation (torch.lu).
Tensor.cauchy_: Fill with Cauchy samples (median, sigma).
Tensor.copy_: Copy src's values (broadcast and converted) into this tensor.
Tensor.exponential_: Fill with exponential samples of rate lambd.
Tensor.fill_: Fill with one value.
Tensor.fill_diagonal_: Fill the main diagonal with a value (wrap for tall matrices).
Tensor.geometric_: Fill with geometric samples of success probability p.
Tensor.log_normal_: Fill with log-normal samples (mean, std of the log).
Tensor.normal_: Fill with normal samples (mean, std).
Tensor.random_: Fill with integers uniform in [from, to) (the dtype's range by default).
Tensor.uniform_: Fill with uniform samples in [from, to).
Tensor.zero_: Fill with zeros.
Tensor.elu_: In-place ELU.
Tensor.gelu_: In-place GELU.
Tensor.hardtanh_: In-place hardtanh.
Tensor.leaky_relu_: In-place leaky ReLU.
Tensor.silu_: In-place SiLU.
BFloat16Tensor: The legacy type of bfloat16 tensors: calling it builds one (from a shape or data).
BoolTensor: The legacy type of bool tensors: calling it builds one (from a shape or data).
ByteTensor: The legacy type of uint8 tensors: calling it builds one (from a shape or data).
CharTensor: The legacy type of int8 tensors: calling it builds one (from a shape or data).
DoubleTensor: The legacy type of float64 tensors: calling it builds one (from a shape or data).
FloatTensor: The legacy type of float32 tensors: calling it builds one (from a shape or data).
HalfTensor: The legacy type of float16 tensors: calling it builds one (from a shape or data).
IntTensor: The legacy type of int32 tensors: calling it builds one (from a shape or data).
LongTensor: The legacy type of int64 tensors: calling it builds one (from a shape or data).
ShortTensor: The legacy type of int16 tensors: calling it builds one (from a shape or data).
are_deterministic_algorithms_enabled: Whether use_deterministic_algorithms(True) is in effect.
can_cast: Whether a value of one dtype can be cast to another under PyTorch's casting rules.
get_float32_matmul_precision: The value last given to set_float32_matmul_precision ('highest' by default).
get_num_threads: The thread count of ember's intra-op pool and of NumPy's BLAS (set_num_threads's value).
is_autocast_enabled: False: ember has no autocast (mixed precision is off).
is_floating_point: Whether input's dtype is a floating-point one.
is_nonzero: The truth value of a one-element tensor.
is_tensor: Whether obj is a Tensor.
numel: The number of elements of input.
result_type: The dtype of an arithmetic op on the two arguments (PyTorch's promotion).
dtype: A tensor's element type (ember.float32, ...), with PyTorch's attributes (is_floating_point, itemsize, ...).
dtype.to_real: The real dtype of a complex one (itself for a real one).
get_default_dtype: The default floating dtype (float32 unless set).
set_default_dtype: Set the default floating dtype (the dtype of new floating tensors and of Python floats).
memory_format: A memory format (contiguous_format, channels_last, channels_last_3d, preserve_format).
"""

DIFFERENCES = """
fft.fft: float32 results differ from PyTorch's by float32 rounding (another FFT library and summation
  order; relative differences of about 1e-5 on the smaller entries); float64 agrees to 1e-14.
fft.ifft: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.fft2: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.ifft2: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.fftn: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.ifftn: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.rfft: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.rfft2: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.rfftn: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.ihfft: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.ihfft2: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
fft.ihfftn: float32 results differ from PyTorch's by float32 rounding (another FFT library); float64 agrees.
special.bessel_j0: float64 values agree with mpmath to about 1e-16; PyTorch's kernel is off by up to
  about 4e-7 on [0.1, 30] (so the two differ by that much).
special.bessel_y1: float64 values agree with mpmath to about 2e-15; PyTorch's kernel is off by up to
  about 9e-7 on [0.1, 30] (so the two differ by that much).
cumsum: float32 sums are accumulated in another order than PyTorch's: results differ by float32
  rounding (a few 1e-6 of the largest partial sum over 1e5 elements); float64 agrees.
maximum: the gradient where an operand is NaN: PyTorch sends the incoming gradient to both
  operands, ember to the second only (values agree).
minimum: the gradient where an operand is NaN: PyTorch sends the incoming gradient to both
  operands, ember to the second only (values agree).
gelu: with approximate='none', float32 (and bfloat16, computed in float32) gelu(3e38) is 3e38 and
  gelu(+inf) is inf, as PyTorch's AVX2 kernels give; where PyTorch runs its AVX-512 kernels
  (torch.backends.cpu.get_cpu_capability() 'AVX512') they give inf and NaN there. For x below about -3, where
  PyTorch's x * (1 + erf(x / sqrt(2))) / 2 loses its relative accuracy to cancellation (down to 0),
  ember's keeps float32's (relative error about 1e-6); elsewhere the two differ by at most about
  1e-6. float64 (to about 1e-15) and approximate='tanh' (to float32 rounding) agree.
take: a non-integer index raises IndexError where PyTorch raises RuntimeError.
is_conj: ember has no lazy conjugate bit: conj() copies at once, so this is always False.
is_neg: ember has no lazy negative bit, so this is always False.
resolve_conj: ember has no lazy conjugate bit: conj() copies at once, so there is nothing to resolve.
Tensor.cuda: raises RuntimeError ("ember has no CUDA device") where PyTorch's CPU-only build raises
  AssertionError ("Torch not compiled with CUDA enabled").
Tensor.to: a device other than 'cpu' and 'meta' raises RuntimeError; PyTorch's CPU-only build raises
  AssertionError for 'cuda'.
ops.nn:embedding: sparse=True is refused with NotImplementedError (no sparse gradients).
native_layer_norm: the mean and inverse-std outputs require grad (they are differentiable);
  PyTorch's do not.
dtype: ember has no complex32 (chalf), uint16, uint32, uint64 or float8 dtypes; PyTorch has them.
"""
