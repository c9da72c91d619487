from .module import Module, RemovableHandle, register_module_forward_hook, \
    register_module_forward_pre_hook  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear, Bilinear, LazyLinear  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, ELU, GELU, SiLU, Mish, Hardtanh, Hardsigmoid,  # noqa: F401
                         Hardswish, Softplus, Tanh, Sigmoid, LogSigmoid, Softsign, Tanhshrink, SELU, CELU,
                         GLU, Threshold, Softmax, LogSoftmax, Softmin, Softmax2d, PReLU, Hardshrink,
                         Softshrink, PixelShuffle, PixelUnshuffle)
from .dropout import Dropout, Dropout1d, Dropout2d, AlphaDropout  # noqa: F401
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .normalization import LayerNorm, RMSNorm, GroupNorm, InstanceNorm1d, InstanceNorm2d  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .distance import PairwiseDistance, CosineSimilarity  # noqa: F401
from .conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401
from .pooling import (MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool1d, AvgPool1d,  # noqa: F401
                      AdaptiveAvgPool1d, Upsample, UpsamplingNearest2d, AdaptiveMaxPool2d,
                      UpsamplingBilinear2d)
from .padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, CircularPad1d,
                      CircularPad2d)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .loss import (L1Loss, MSELoss, SmoothL1Loss, HuberLoss, BCELoss, BCEWithLogitsLoss, NLLLoss,  # noqa: F401
                   CrossEntropyLoss, KLDivLoss, SoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss,
                   CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss, HingeEmbeddingLoss,
                   MultiLabelSoftMarginLoss)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerDecoder, Transformer)
from . import activation as _activation  # noqa: E402
_activation.MultiheadAttention = MultiheadAttention  # PyTorch's import path: torch.nn.modules.activation
from .conv import Conv3d, ConvTranspose1d, ConvTranspose3d  # noqa: F401,E402
from .pooling import (MaxPool3d, AvgPool3d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,  # noqa: F401,E402
                      AdaptiveMaxPool3d, FractionalMaxPool2d, FractionalMaxPool3d, MaxUnpool1d, MaxUnpool2d,
                      MaxUnpool3d)
from .activation import RReLU  # noqa: F401,E402
from .dropout import Dropout3d, FeatureAlphaDropout  # noqa: F401,E402
from .loss import MultiMarginLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss, CTCLoss  # noqa: F401,E402
from .channelshuffle import ChannelShuffle  # noqa: F401,E402
from .fold import Fold, Unfold  # noqa: F401,E402
from .normalization import LocalResponseNorm  # noqa: F401,E402
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401,E402
