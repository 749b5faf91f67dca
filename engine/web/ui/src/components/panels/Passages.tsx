/** Passages with their scores, best first: a Retrieve step's (the run view) and the retrieval test's (Knowledge tab). */
import { passageWhere, scoreText, snippet } from '../../model/knowledge';

export interface PassageRow {
  source: string;
  line?: number | null;
  page?: number | null;
  score: number | null;
  lexical: number | null;
  embedding: number | null;
  text: string;
}

export function Passages({ passages, label }: { passages: PassageRow[]; label: string }) {
  if (!passages.length) return <div className="muted small">No passage matched.</div>;
  return (
    <ol className="passages" aria-label={label}>
      {passages.map((p, i) => (
        <li key={i} className="passage" data-testid="passage">
          <div className="passage__head">
            <code className="passage__where">{passageWhere(p)}</code>
            <span className="field__spacer" />
            <span className="passage__score" title="the fused score, 0 to 1: what top_k and min_score read">
              score <strong data-testid="passage-score">{scoreText(p.score)}</strong>
            </span>
            <span className="muted small" title="words (BM25, 0 to 1) and meaning (the embedding's cosine)">
              lex {scoreText(p.lexical)} · emb {scoreText(p.embedding)}
            </span>
          </div>
          {p.text && <div className="passage__text small">{snippet(p.text, 320)}</div>}
        </li>
      ))}
    </ol>
  );
}
