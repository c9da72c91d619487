"""The two small models of the tutorials: an MLP for flattened 28x28 images and PyTorch's MNIST CNN."""
from .. import nn
from ..ops import flatten


class SimpleMLP(nn.Module):
    """784 -> 128 -> 128 -> 10 with ReLUs; returns logits (use CrossEntropyLoss)."""

    def __init__(self, in_features=784, hidden=128, num_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, num_classes)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = flatten(x, 1)
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


class SimpleCNN(nn.Module):
    """conv 1->32 3x3, conv 32->64 3x3, max-pool 2, fc 9216->128, fc 128->10 (1x28x28 inputs), with
    the dropouts of PyTorch's MNIST example; returns logits (use CrossEntropyLoss).
    ``in_channels`` and ``image_size`` adapt it to other square images: fc1 then takes
    64 * ((image_size - 4) // 2) ** 2 features (256 for the 8x8 digits)."""

    def __init__(self, num_classes=10, in_channels=1, image_size=28):
        super().__init__()
        if image_size < 6:
            raise ValueError(f"SimpleCNN: image_size must be at least 6, got {image_size}")
        self.conv1 = nn.Conv2d(in_channels, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(64 * ((image_size - 4) // 2) ** 2, 128)
        self.fc2 = nn.Linear(128, num_classes)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.dropout1(x)
        x = self.relu(self.fc1(flatten(x, 1)))
        return self.fc2(self.dropout2(x))
