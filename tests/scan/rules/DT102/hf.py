import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="cuda")  # expect: DT102
emb = torch.empty(10, 4, device=torch.device("cuda:1"))  # expect: DT102
ok = str(emb.device).startswith("cuda")
