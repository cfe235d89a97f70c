"""The training-loop callbacks of ``torchx.progress``, in real trainers (PyTorch Lightning
and Hugging Face ``transformers``, a tiny model on the CPU, each in a process of its own):
the reports they write are what ``status`` reads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchx.specs.progress import from_log_tail

LIGHTNING = """
import torch, lightning.pytorch as pl
from torch.utils.data import DataLoader, TensorDataset
from torchx.progress.lightning import ProgressCallback

class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

data = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
trainer = pl.Trainer(max_steps=6, callbacks=[ProgressCallback()], logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, accelerator="cpu", log_every_n_steps=1)
trainer.fit(Tiny(), data)
"""

TRANSFORMERS = """
import torch
from transformers import Trainer, TrainingArguments
from torchx.progress.transformers import ProgressCallback

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
    def forward(self, x, labels=None):
        out = self.layer(x)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return {"x": torch.randn(4), "labels": torch.randn(1)}

args = TrainingArguments(output_dir="out", max_steps=6, per_device_train_batch_size=8,
                         logging_steps=2, report_to=[], use_cpu=True, save_strategy="no",
                         disable_tqdm=True)
Trainer(model=Tiny(), args=args, train_dataset=Data(),
        callbacks=[ProgressCallback()]).train()
"""


@pytest.mark.parametrize(
    ("library", "code"), [("lightning", LIGHTNING), ("transformers", TRANSFORMERS)]
)
def test_a_trainer_reports_its_steps_total_and_loss(
    library: str, code: str, tmp_path: Path
) -> None:
    __import__(library)  # in the test env (hatch.toml): a missing one fails, never skips
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "TORCHX_PROGRESS_INTERVAL": "0"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    progress = from_log_tail(run.stderr, "trainer", 0, running=False, now=0.0)
    assert progress is not None, run.stderr[-3000:]
    assert (progress.step, progress.total, progress.fraction) == (6, 6, 1.0), progress
    assert "loss" in progress.metrics, progress
