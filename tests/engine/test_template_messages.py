"""What a template error tells the person who wrote the diagram."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("template", ["{{ item.tetso }}", "said {{ item.tetso }}", "{{ item['tetso'] }}"])
def test_a_column_typo_lists_the_rows_columns(runner, write, template: str) -> None:
    path = write(f"""
        diagram: typo
        blocks:
          - id: start
            type: Start
            variables:
              rows: {{columns: [texto, id], rows: [["olá", 1]]}}
            next: each
          - id: each
            type: Loop
            with: {{for_each: "{{{{ rows }}}}"}}
            body: use
          - id: use
            type: Set
            set: {{x: "{template}"}}
            next: each
    """)
    result = runner.run(path)
    assert result.status == "failed"
    assert result.errors[0]["type"] == "template_undefined"
    assert "(its keys: texto, id; did you mean 'texto'?)" in result.errors[0]["message"]
