import { describe, expect, it } from 'vitest';
import { mayOverflow, NODE_TEXT } from './sizes';

describe('mayOverflow', () => {
  it('lets short ids, types and labels go unclipped', () => {
    expect(mayOverflow('b123', NODE_TEXT.title)).toBe(false);
    expect(mayOverflow('Set', NODE_TEXT.type)).toBe(false);
    expect(mayOverflow('Loop', NODE_TEXT.type)).toBe(false);
    expect(mayOverflow('', NODE_TEXT.id)).toBe(false);
    expect(mayOverflow('classify_order', NODE_TEXT.id)).toBe(false);
    expect(mayOverflow('classify_the_customer_order', NODE_TEXT.id)).toBe(true);
  });
  it('clips a long label, and sooner in capitals or wide letters than in narrow ones', () => {
    expect(mayOverflow('Ask Claude which tool answers the order', NODE_TEXT.title)).toBe(true);
    expect(mayOverflow('iiiiiiiiii', NODE_TEXT.title)).toBe(false);
    expect(mayOverflow('MMMMMMMMMM', NODE_TEXT.title)).toBe(true);
  });
  it('counts characters outside ASCII as wide (CJK, emoji: a pair of UTF-16 units)', () => {
    expect(mayOverflow('注文を分類する', NODE_TEXT.title)).toBe(true);
    expect(mayOverflow('😀😀😀', NODE_TEXT.title)).toBe(true);
    expect(mayOverflow('abc', NODE_TEXT.title)).toBe(false);
  });
  it('is an upper bound: a line said to fit is narrower than its room at its largest font size', () => {
    // DejaVu Sans Bold advance widths (em) of the widest glyphs of each class, the widest usual sans
    const widest: Record<string, number> = { m: 1.042, w: 0.924, M: 0.995, W: 1.103, o: 0.687, a: 0.675, '8': 0.696, H: 0.837, _: 0.5 };
    for (const [ch, em] of Object.entries(widest)) {
      for (let n = 1; n < 40; n++) {
        const text = ch.repeat(n);
        if (!mayOverflow(text, NODE_TEXT.title)) expect(n * em * NODE_TEXT.title.fontPx).toBeLessThanOrEqual(NODE_TEXT.title.room);
      }
    }
  });
});
