"""The paper's policy experiment on a real vLLM (issue 15; docs/evaluation.md, "On vLLM").

    python -m tempokv.experiment --scenario fig4-policies|fig6-rate [--policies LIST]
        [--seeds N] [--json FILE] [--out DIR] [--plots] [--quick]

``tempokv eval --mode vllm`` hands its arguments to this module.
"""
