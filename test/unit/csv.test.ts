import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { csvCell, toCsv } from '../../src/lib/csv.js'
import { parseCsv } from '../helpers/csv-parse.js'

describe('CSV of the exports (src/lib/csv.ts)', () => {
  it('quotes every cell and doubles quotes; commas, CR, LF and CRLF stay inside the cell', () => {
    const hostile = ['a,b', 'say "hi"', 'line\nbreak', 'cr\rhere', 'crlf\r\nend', '""', '', ' padded ']
    const file = toCsv(
      ['v'],
      hostile.map((v) => ({ v })),
    )
    const rows = parseCsv(file)
    assert.deepEqual(
      rows.slice(1).map((r) => r[0]),
      hostile,
    )
    assert.equal(csvCell('say "hi"'), '"say ""hi"""')
    assert.ok(file.endsWith('\r\n'))
    assert.ok(!file.startsWith('\uFEFF'), 'no byte order mark')
  })

  it('writes the columns of platform-made identifiers verbatim: a payment identifier starting with - keeps it', () => {
    // base64url identifiers start with "-" once in 64: defused, the export named a payment that does not exist.
    const file = toCsv(['identifier', 'memo'], [{ identifier: '-Ab3_x9', memo: '-Ab3_x9' }], new Set(['identifier']))
    assert.deepEqual(parseCsv(file)[1], ['-Ab3_x9', "'-Ab3_x9"])
  })

  it("defuses formulas: a leading =, +, -, @ (after spaces or a BOM), tab or CR gets a leading '", () => {
    for (const text of [
      '=1+1',
      '+1',
      '-1',
      '@SUM(A1)',
      '\t=x',
      '\r=x',
      '  =cmd',
      '\uFEFF=HYPERLINK("x")',
      '=HYPERLINK("http://e.x","y")',
    ]) {
      const cell = parseCsv(toCsv(['v'], [{ v: text }]))[1]?.[0]
      assert.equal(cell, `'${text}`, JSON.stringify(text))
    }
    for (const text of ['a=b', 'x-1', 'mail@x', '1.5', 'GABC', '\uFEFFplain']) {
      assert.equal(parseCsv(toCsv(['v'], [{ v: text }]))[1]?.[0], text, JSON.stringify(text))
    }
    // Numbers and booleans are data, not text a person typed: -1 as a number stays -1.
    assert.equal(csvCell(-1), '"-1"')
    assert.equal(csvCell(true), '"true"')
  })

  it('writes NUL and lone surrogates as U+FFFD; keeps pairs, BOMs and other characters', () => {
    const cells = ['a\u0000b', 'x\uD800y', 'x\uDC00y', 'end\uD83D', '😀', '\uFEFFbom', 'é ü 中']
    const parsed = parseCsv(
      toCsv(
        ['v'],
        cells.map((v) => ({ v })),
      ),
    )
      .slice(1)
      .map((r) => r[0])
    assert.deepEqual(parsed, ['a\uFFFDb', 'x\uFFFDy', 'x\uFFFDy', 'end\uFFFD', '😀', '\uFEFFbom', 'é ü 中'])
    // The file is well-formed UTF-16, so it encodes to UTF-8 and back unchanged.
    const file = toCsv(
      ['v'],
      cells.map((v) => ({ v })),
    )
    assert.equal(Buffer.from(file, 'utf8').toString('utf8'), file)
  })

  it('writes null as an empty cell and objects as JSON', () => {
    const rows = parseCsv(toCsv(['a', 'b', 'c'], [{ a: null, b: { k: ['x', 1] }, c: undefined }]))
    assert.deepEqual(rows, [
      ['a', 'b', 'c'],
      ['', '{"k":["x",1]}', ''],
    ])
  })
})
