"""diagrama's block types, one module each; `blocks.registry` lists them."""
