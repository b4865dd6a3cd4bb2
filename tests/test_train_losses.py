"""Loss terms against values worked out by hand, and the total as one scalar."""
from __future__ import annotations

import math

import pytest
import torch

from sayuri_async.train.config import LossConfig
from sayuri_async.train.losses import compute_losses


def _case():
    # two positions on a "1x1 board": A = 2 actions, one ownership point
    outputs = {
        "policy": torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]], requires_grad=True),
        "opp_policy": torch.tensor([[0.0, 0.0], [0.0, 0.0]]),
        "wdl": torch.zeros(2, 3),
        "score": torch.tensor([3.0, -20.0]),
        "ownership": torch.tensor([[0.6], [0.0]]),
    }
    targets = {
        "policy": torch.tensor([[1.0, 0.0], [0.0, 0.0]]),
        "policy_mask": torch.tensor([True, False]),  # second row: a cheap search, no target
        "opp_policy": torch.tensor([[0.0, 1.0], [0.0, 0.0]]),
        "opp_mask": torch.tensor([True, False]),  # second row: last position of its game
        "wdl": torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
        "score": torch.tensor([0.0, 0.0]),
        "ownership": torch.tensor([[1.0], [-1.0]]),
    }
    return outputs, targets


def test_each_term_matches_the_hand_computed_value():
    outputs, targets = _case()
    cfg = LossConfig(policy=1.0, opp_policy=0.5, wdl=2.0, score=0.1, ownership=3.0, score_huber_delta=10.0)
    total, parts = compute_losses(outputs, targets, cfg)
    # policy: only row 0 counts, uniform logits over 2 actions: log 2
    assert parts["policy"].item() == pytest.approx(math.log(2))
    assert parts["opp_policy"].item() == pytest.approx(math.log(2))
    # wdl: zero logits over 3 outcomes: log 3 for each row
    assert parts["wdl"].item() == pytest.approx(math.log(3))
    # Huber, delta 10: error 3 -> 3^2/2 = 4.5; error 20 -> 10 * (20 - 5) = 150; mean 77.25
    assert parts["score"].item() == pytest.approx(77.25)
    # ownership 0.6 -> P(own) = 0.8, target own: -log 0.8; ownership 0 -> 0.5: log 2
    assert parts["ownership"].item() == pytest.approx((-math.log(0.8) + math.log(2)) / 2)
    expected = (math.log(2) + 0.5 * math.log(2) + 2 * math.log(3) + 0.1 * 77.25
                + 3.0 * (-math.log(0.8) + math.log(2)) / 2)
    assert total.item() == pytest.approx(expected)


def test_total_is_a_scalar_and_backward_works_without_a_gradient_argument():
    outputs, targets = _case()
    total, _ = compute_losses(outputs, targets, LossConfig())
    assert total.dim() == 0
    total.backward()  # a non-scalar here is the "grad can be implicitly created only for scalar outputs" failure
    # the masked-out row gets no policy gradient
    assert torch.all(outputs["policy"].grad[1] == 0)
    # softmax CE gradient for row 0: (softmax - target) / rows = ([0.5, 0.5] - [1, 0]) / 1
    assert torch.allclose(outputs["policy"].grad[0], torch.tensor([-0.5, 0.5]))


def test_no_full_search_rows_gives_zero_policy_loss_not_nan():
    outputs, targets = _case()
    targets["policy_mask"] = torch.tensor([False, False])
    total, parts = compute_losses(outputs, targets, LossConfig())
    assert parts["policy"].item() == 0.0
    assert math.isfinite(total.item())
