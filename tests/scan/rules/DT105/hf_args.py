from transformers import Seq2SeqTrainingArguments, TrainingArguments

args = TrainingArguments(output_dir="out", fp16=True)  # expect: DT105
args = Seq2SeqTrainingArguments(output_dir="out", fp16=True, predict_with_generate=True)  # expect: DT105
args = TrainingArguments(output_dir="out", fp16=False, bf16=True)
