import torch.nn as nn
import torch.nn.functional as F

criterion = nn.MultiMarginLoss(margin=0.5)  # expect: DT203


def hinge(logits, target):
    return F.multi_margin_loss(logits, target)  # expect: DT203


other = nn.MultiLabelMarginLoss()
ce = F.cross_entropy
