from peft import prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments

bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")  # expect: DT206
model = AutoModelForCausalLM.from_pretrained("gpt2", load_in_8bit=True)  # expect: DT206
model = prepare_model_for_kbit_training(model)  # expect: DT206
args = TrainingArguments(output_dir="out", optim="paged_adamw_32bit")  # expect: DT206
plain = AutoModelForCausalLM.from_pretrained("gpt2", load_in_8bit=False)
args2 = TrainingArguments(output_dir="out", optim="adamw_torch")
