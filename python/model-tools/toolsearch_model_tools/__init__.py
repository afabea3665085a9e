"""all-MiniLM-L6-v2 trained for tool retrieval, int8: the data files of toolsearch's `tools`
model (`model.onnx`, the tokenizer files). toolsearch finds this directory by importing the
package and checks every file against `SHA256SUMS.json` before loading it."""
