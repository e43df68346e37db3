"""ResNet-20 in PyTorch, written as PyTorch users write it (a BasicBlock module), with the
shared initial weights converted to its NCHW/OIHW layouts.

TensorFlow's "same" padding of a stride-2 3x3 convolution on an even image pads one pixel
after the image only; PyTorch's ``padding=1`` pads both sides and would shift every pixel,
so those convolutions pad explicitly (``ZeroPad2d((0, 1, 0, 1))``) to compute what the other
frameworks compute.
"""

from __future__ import annotations

from .common import BN_EPS, BN_MOMENTUM, RESNET_STAGES, resnet_blocks, resnet_params


def resnet20():
    import torch
    from torch import nn

    params = resnet_params()

    def conv(name: str, stride: int) -> nn.Module:
        kernel = params[name]
        size, c_in, c_out = kernel.shape[0], kernel.shape[2], kernel.shape[3]
        layer = nn.Conv2d(c_in, c_out, size, stride, padding=size // 2 if stride == 1 else 0, bias=False)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(kernel.transpose(3, 2, 0, 1).copy()))
        if stride == 2 and size == 3:
            return nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), layer)
        return layer

    def norm(channels: int) -> nn.Module:
        return nn.BatchNorm2d(channels, eps=BN_EPS, momentum=1 - BN_MOMENTUM)

    class BasicBlock(nn.Module):
        def __init__(self, i: int, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = conv(f"block{i}.conv1", stride), norm(c_out)
            self.conv2, self.bn2 = conv(f"block{i}.conv2", 1), norm(c_out)
            self.shortcut = nn.Identity()
            if stride != 1 or c_in != c_out:
                self.shortcut = nn.Sequential(conv(f"block{i}.projection", stride), norm(c_out))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + self.shortcut(x))

    class ResNet20(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem, self.bn = conv("stem", 1), norm(RESNET_STAGES[0])
            self.blocks = nn.Sequential(*(BasicBlock(i, *spec) for i, spec in enumerate(resnet_blocks())))
            self.fc = nn.Linear(RESNET_STAGES[-1], params["dense.kernel"].shape[1])
            with torch.no_grad():
                self.fc.weight.copy_(torch.from_numpy(params["dense.kernel"].T.copy()))
                self.fc.bias.copy_(torch.from_numpy(params["dense.bias"]))

        def forward(self, x):
            x = torch.relu(self.bn(self.stem(x)))
            x = self.blocks(x)
            return self.fc(x.mean((2, 3)))

    return ResNet20()
