import torch

rank = 0
model = torch.nn.Linear(2, 2).to(f"cuda:{rank}")  # expect: DT102
dev = "cuda:{}".format(rank)  # expect: DT102
y = torch.zeros(2).to(
    "cuda"  # expect: DT102
)
QUERY = """
SELECT * FROM runs WHERE device = 'cuda'
"""
