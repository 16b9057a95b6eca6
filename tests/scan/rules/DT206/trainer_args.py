from transformers import AutoModelForCausalLM, TrainingArguments

args = TrainingArguments(output_dir="out", optim="adamw_bnb_8bit")  # expect: DT206
model = AutoModelForCausalLM.from_pretrained("gpt2", load_in_4bit=True)  # expect: DT206
OPTIMIZER = "paged_adamw_8bit"  # expect: DT206
args = TrainingArguments(output_dir="out", optim="adamw_torch_fused")
