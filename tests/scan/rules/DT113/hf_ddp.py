import os

from transformers import AutoModelForCausalLM

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
model = AutoModelForCausalLM.from_pretrained("gpt2", device_map={"": LOCAL_RANK})  # expect: DT113
model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
