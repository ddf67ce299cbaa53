"""LLM access for Kernel Studio: endpoints, the retrying client, prompt
templates, robust JSON replies, generation tasks and the reply relay.

Plain Python (no Django): the web app and RQ jobs call it with plain data.
"""
