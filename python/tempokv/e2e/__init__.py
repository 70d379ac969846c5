"""The end-to-end check of the vLLM connector (scripts/vllm-e2e): a hub-free model, the passes."""
