import pytorch_lightning as pl

trainer = pl.Trainer(gpus=1, max_epochs=10)  # expect: DT104
trainer = pl.Trainer(accelerator="gpu", devices=1)  # expect: DT104
trainer = pl.Trainer(accelerator="auto", devices=1)
