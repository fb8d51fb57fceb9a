#!/usr/bin/env node
// The reference side of tests/text/test_bpe_reference.sh: npm gpt-3-encoder's encode/decode on a corpus of strings
// and on the KJV text, and the comparison with iclab's output. Strings are byte strings (hex, one a line); the
// reference sees each as the JavaScript string TextDecoder('utf-8', {ignoreBOM: true}) makes of it (invalid UTF-8
// -> U+FFFD), which is iclab's stated rule (docs/text.md).
//   node bpe_reference.js corpus REFERENCE_DIR OUT_DIR     corpus.hex, expected_ids.txt, expected_roundtrip.hex,
//                                                         random_ids.txt, expected_decode.hex
//   node bpe_reference.js check OUT_DIR                   compares iclab_ids.txt, iclab_roundtrip.hex, iclab_decode.hex
//   node bpe_reference.js encode-file REFERENCE_DIR TEXT OUT_IDS [SEPARATOR_LINE]
//                                                         ids of the file (documents cut at SEPARATOR_LINE lines,
//                                                         joined with 50256), one per line
'use strict';
const fs = require('fs');
const path = require('path');

const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const hex = bytes => Buffer.from(bytes).toString('hex');
const utf8 = s => Buffer.from(s, 'utf8');

// A small deterministic generator (mulberry32), so that the corpus is the same on every run.
let state = 0x1c1ab;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = list => list[Math.floor(random() * list.length)];
const integer = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

// ---- the corpus ---------------------------------------------------------------------------------------------------
const handWritten = [
  '', ' ', '  ', '\n', '\n\n', ' \n', '\t', '\r\n', 'a', 'Hello world', 'Hello, world!', ' leading space', 'trailing space ',
  'trailing spaces   ', 'two  spaces', 'three   spaces', 'ten          spaces', 'tab\tseparated\tvalues', 'tabs\t\t\tthree',
  'mixed \t \t whitespace', 'line one\nline two\n', 'para one\n\npara two', 'three\n\n\nnewlines', ' \n x', '\n \nx', '\t a',
  'x \n', 'x  \n  y', '   indented code', '\n    return x;\n', 'windows\r\nline\r\nends\r\n', 'a\u000bb\u000cc', 'a\u0085b',
  'no\u00a0break', 'ideographic\u3000space', 'line\u2028sep', 'para\u2029sep', '\ufeffwith BOM', 'mid\ufeffBOM', 'zero\u200bwidth',
  'mongolian\u180evowel', 'thin\u2009space', 'narrow\u202fnbsp', '\u1680ogham', 'en\u2000quad \u2001 \u200a',
  "I'm", "it's", "IT'S", "It'S", "they'll", "THEY'LL", "we've", "you'd", "you're", "YOU'RE", "isn't", "don't", "Don'T",
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "''", "'''s", "'sa", "'llama", "rock 'n' roll", "O'Neil's", "'90s",
  "the dog's bone's", "cats'", " 's", "x 's", "a'b'c'd", "'S'T'RE'VE'M'LL'D", "’s curly",
  '123', '1234567890123', '3.14159', '1,000,000', ' 42', 'abc123def', '٣٤٥', '१२३', '½ ⅓ ¾', 'Ⅻ Ⅷ', '²³¹', '①②③', '𝟘𝟙𝟚', '𒐀',
  '!!!', '...', '?!?!', ' -- ', '—–-', '«guillemets»', '„quotes“', '@#$%^&*()', '<|endoftext|>', 'a<|endoftext|>b', '```js```',
  '(parens) [brackets] {braces}', 'email@example.com', 'https://example.com/path?q=1&r=2', '#hashtag $money 100%', '~/.bashrc',
  '👍', '👍🏽', '👍🏻👍🏼👍🏽👍🏾👍🏿', '👨‍👩‍👧‍👦', '👩🏽‍💻', '🏳️‍🌈', '❤️', '❤', '🇺🇸🇩🇪', '1️⃣', '#️⃣', 'emoji 😀 in text',
  '😀😃😄😁', '🧑‍🤝‍🧑', ' 🎉🎉', 'é', 'e\u0301', 'n\u0303', 'Z̤͔ͧ̑̓', 'a\u0300\u0301\u0302\u0303', '\u0301start', 'नमस्ते दुनिया',
  'สวัสดีชาวโลก', 'مرحبا بالعالم', 'שלום עולם', 'Γειά σου Κόσμε', 'Привет, мир!', 'Բարեւ աշխարհ', 'გამარჯობა', 'ሰላም ዓለም',
  '你好，世界', 'こんにちは世界', 'カタカナ', '안녕하세요 세계', 'வணக்கம் உலகம்', 'ສະບາຍດີ', 'བཀྲ་ཤིས་བདེ་ལེགས།', 'ᏣᎳᎩ',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '𝐁𝐨𝐥𝐝', '𠀀𠀁𠀂', '\ue000private', '\u{10fffd}', '\u{e0041}tag', 'variation\ufe0f', 'ﬁ ligature', 'ＡＢＣ１２３',
  'Ǆǅǆ', 'ßẞ', 'ǰ̌', 'İstanbul', 'ŉ', 'ᾼ', 'x²+y²=z²', '∀x∈ℝ: x≥0', '→ ← ↑ ↓', '€100 £50 ¥1000', '©®™', '\u00ad soft hyphen',
  '\u0000nul', '\u0001\u0002\u001f', '\u007f del', '\u0080\u009f c1',
];
const invalidBytes = [
  [0xff], [0xfe, 0xff], [0xc3], [0x61, 0x62, 0x63, 0xe2, 0x82], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80],
  [0xc0, 0xaf], [0xc1, 0xbf], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0x80], [0x80, 0x80, 0x80], [0xbf, 0x61],
  [0xf0, 0x9f, 0x98], [0xf0, 0x9f, 0x98, 0x20], [0x20, 0xf0, 0x9f], [0xe2, 0x82, 0x61], [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xfc, 0x84, 0x80, 0x80, 0x80, 0x80], [0x61, 0xc3, 0x20, 0x62], [0xc3, 0xa9, 0xa9], [0xe0, 0xa0], [0xf5, 0x80], [0xef, 0xbb],
  [0x27, 0x73, 0xc3], [0x20, 0x80, 0x61], [0x31, 0x32, 0xff, 0x33], [0xef, 0xbb, 0xbf, 0x61], [0xef, 0xbf, 0xbd],
];

const blocks = [
  [0x20, 0x7e], [0xa0, 0xff], [0x100, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x530, 0x58f], [0x590, 0x5ff],
  [0x600, 0x6ff], [0x900, 0x97f], [0x980, 0x9ff], [0xe00, 0xe7f], [0xf00, 0xfff], [0x10a0, 0x10ff], [0x1100, 0x11ff],
  [0x1200, 0x137f], [0x13a0, 0x13ff], [0x1680, 0x169f], [0x1e00, 0x1eff], [0x2000, 0x206f], [0x2070, 0x209f], [0x20a0, 0x20cf],
  [0x2100, 0x214f], [0x2150, 0x218f], [0x2190, 0x21ff], [0x2200, 0x22ff], [0x2460, 0x24ff], [0x2500, 0x257f], [0x3000, 0x303f],
  [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xe000, 0xe0ff], [0xfb00, 0xfb4f], [0xfe00, 0xfe0f], [0xfe70, 0xfeff],
  [0xff00, 0xffef], [0x10000, 0x100ff], [0x10300, 0x1034f], [0x12000, 0x123ff], [0x1d400, 0x1d7ff], [0x1f300, 0x1faff],
  [0x20000, 0x2a6df], [0xe0000, 0xe007f], [0x10fff0, 0x10ffff],
];
function randomCodePoint() {
  if (random() < 0.15) {
    let cp;
    do cp = integer(0, 0x10ffff); while (cp >= 0xd800 && cp <= 0xdfff);
    return String.fromCodePoint(cp);
  }
  const [lo, hi] = pick(blocks);
  return String.fromCodePoint(integer(lo, hi));
}
const words = ['the', 'The', 'LORD', 'said', 'unto', 'Moses', 'hello', 'world', 'iclab', 'token', 'über', 'naïve', 'café', 'Ñandú',
  'город', 'Ελλάδα', 'עברית', 'العربية', 'हिन्दी', '日本語', '中文', '한국어', 'ไทย', 'tschüß', 'ﬂow', 'x', 'A', 'QWERTY'];
const spaces = [' ', ' ', ' ', '  ', '   ', '\n', '\n\n', '\t', ' \t', '\t ', '\r\n', '\u00a0', '\u3000', '\u2029', '\u000b',
  '\u000c', '\ufeff', '\u0085', '\u200b', ' \n', '\n ', '      '];
const contractions = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'d", "'D", "'", "''", "’s"];
const emoji = ['👍🏽', '👨‍👩‍👧', '🏳️‍🌈', '🇩🇪', '❤️', '1️⃣', '😀', '🙈🙉🙊', '👩‍❤️‍💋‍👨', '🧔🏿‍♂️'];
function randomEmoji() {
  if (random() < 0.5) return pick(emoji);
  let s = String.fromCodePoint(integer(0x1f300, 0x1faff));
  if (random() < 0.5) s += String.fromCodePoint(integer(0x1f3fb, 0x1f3ff));
  if (random() < 0.4) s += '\u200d' + String.fromCodePoint(integer(0x1f300, 0x1faff));
  if (random() < 0.2) s += '\ufe0f';
  return s;
}
function randomAtom() {
  const r = random();
  if (r < 0.22) return pick(words);
  if (r < 0.40) return pick(spaces);
  if (r < 0.50) return pick(contractions);
  if (r < 0.58) return String(integer(0, 10 ** integer(1, 9)));
  if (r < 0.66) { let p = ''; for (let i = integer(1, 5); i > 0; i--) p += pick('!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'); return p; }
  if (r < 0.74) return randomEmoji();
  if (r < 0.80) { let w = ''; for (let i = integer(1, 8); i > 0; i--) w += String.fromCharCode(integer(0, 1) ? integer(65, 90) : integer(97, 122)); return w; }
  let s = '';
  for (let i = integer(1, 6); i > 0; i--) s += randomCodePoint();
  return s;
}
function randomText() {
  let s = '';
  for (let i = integer(1, 14); i > 0; i--) s += randomAtom();
  return s;
}

function makeCorpus() {
  const items = handWritten.map(s => utf8(s));
  for (const bytes of invalidBytes) items.push(Buffer.from(bytes));
  for (let i = 0; i < 1300; i++) items.push(utf8(randomText()));
  for (let i = 0; i < 80; i++) {  // random bytes: mostly invalid UTF-8
    const b = [];
    for (let j = integer(1, 24); j > 0; j--) b.push(random() < 0.5 ? integer(0x80, 0xff) : integer(0x20, 0x7e));
    items.push(Buffer.from(b));
  }
  for (let i = 0; i < 80; i++) {  // valid text with one byte replaced by a random high byte
    const b = Buffer.from(utf8(randomText()));
    if (b.length) b[integer(0, b.length - 1)] = integer(0x80, 0xff);
    items.push(b);
  }
  // Long runs (the scanner's backtracking over whitespace, and long pieces).
  items.push(utf8(' '.repeat(5000) + 'x'), utf8('\n'.repeat(3000)), utf8('a'.repeat(4000)), utf8('!?'.repeat(1500)),
             utf8('9'.repeat(2500)), utf8(' \t'.repeat(1000) + 'end'), utf8('😀'.repeat(500)));
  return items;
}

// ---- the reference -------------------------------------------------------------------------------------------------
function loadReference(dir) { return require(path.resolve(dir, 'Encoder.js')); }
const pattern = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;  // as in Encoder.js

// The reference's encode on a long text. Its encode() appends with Array.concat per piece (quadratic), so the text is
// cut into chunks of 256 pre-split pieces; each chunk must pre-split into exactly the same pieces on its own, which is
// checked, so the ids are those of encode(text).
function encodeLong(reference, text) {
  const pieces = Array.from(text.matchAll(pattern), m => m[0]);
  const ids = [];
  for (let i = 0; i < pieces.length; i += 256) {
    const chunk = pieces.slice(i, i + 256);
    const joined = chunk.join('');
    const again = Array.from(joined.matchAll(pattern), m => m[0]);
    if (again.length !== chunk.length || again.some((p, k) => p !== chunk[k])) throw new Error(`chunk at piece ${i} splits differently alone`);
    for (const id of reference.encode(joined)) ids.push(id);
  }
  return ids;
}

function corpus(referenceDir, outDir) {
  const reference = loadReference(referenceDir);
  const items = makeCorpus();
  const lines = { corpus: [], ids: [], roundtrip: [], randomIds: [], decoded: [] };
  for (const bytes of items) {
    const text = decoder.decode(bytes);
    const ids = reference.encode(text);
    if (ids.some(id => typeof id !== 'number')) throw new Error(`the reference gave a non-number id for ${hex(bytes)}`);
    lines.corpus.push(hex(bytes));
    lines.ids.push(ids.join(' '));
    lines.roundtrip.push(hex(utf8(text)));  // decode(encode(s)): s itself when valid, else s with U+FFFD
  }
  // Random id sequences, half of their ids single bytes (continuation and lead bytes give cut characters).
  for (let i = 0; i < 400; i++) {
    const ids = [];
    for (let j = integer(1, 8); j > 0; j--) ids.push(random() < 0.5 ? integer(0, 255) : integer(0, 50256));
    lines.randomIds.push(ids.join(' '));
    lines.decoded.push(hex(utf8(reference.decode(ids))));
  }
  const write = (name, list) => fs.writeFileSync(path.join(outDir, name), list.join('\n') + '\n');
  write('corpus.hex', lines.corpus);
  write('expected_ids.txt', lines.ids);
  write('expected_roundtrip.hex', lines.roundtrip);
  write('random_ids.txt', lines.randomIds);
  write('expected_decode.hex', lines.decoded);
  const invalid = items.filter(b => Buffer.compare(utf8(decoder.decode(b)), b) !== 0).length;
  console.log(`corpus: ${items.length} strings (${invalid} with invalid UTF-8), ${lines.randomIds.length} random id sequences`);
}

function readLines(file) {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function check(outDir) {
  const file = name => path.join(outDir, name);
  const corpusLines = readLines(file('corpus.hex'));
  let failures = 0;
  const report = (what, i, expected, got) => {
    if (++failures <= 20) console.log(`MISMATCH ${what} #${i}: input ${corpusLines[i] || ''}\n  reference ${expected}\n  iclab     ${got}`);
  };
  const compareFiles = (what, expectedName, gotName, equal = (a, b) => a === b) => {
    const expected = readLines(file(expectedName)), got = readLines(file(gotName));
    if (expected.length !== got.length) { console.log(`MISMATCH ${what}: ${expected.length} lines expected, ${got.length} from iclab`); failures++; return 0; }
    expected.forEach((e, i) => { if (!equal(e, got[i])) report(what, i, e, got[i]); });
    return expected.length;
  };
  const encoded = compareFiles('encode', 'expected_ids.txt', 'iclab_ids.txt');
  const roundtrips = compareFiles('decode(encode(s))', 'expected_roundtrip.hex', 'iclab_roundtrip.hex');
  // The reference's decode strips a leading U+FEFF (TextDecoder's default); iclab keeps it (decode inverts encode).
  const decoded = compareFiles('decode', 'expected_decode.hex', 'iclab_decode.hex',
                               (e, g) => e === g || (g.startsWith('efbbbf') && g.slice(6) === e));
  const valid = corpusLines.filter((h, i) => readLines(file('expected_roundtrip.hex'))[i] === h).length;
  if (failures) { console.log(`bpe_reference: ${failures} mismatches`); process.exit(1); }
  console.log(`bpe_reference: ${encoded} strings encoded to identical ids; decode(encode(s)) as the reference for ${roundtrips} ` +
              `(== s for the ${valid} valid UTF-8 strings); ${decoded} random id sequences decoded as the reference`);
}

function encodeFile(referenceDir, textFile, outFile, separator) {
  const reference = loadReference(referenceDir);
  const text = decoder.decode(fs.readFileSync(textFile));
  let documents = [text];
  if (separator !== undefined) {
    documents = [];
    let current = [];
    const lines = text.split('\n');
    const last = lines.pop();  // after the final newline: ''
    if (last !== '') throw new Error(`${textFile} does not end with a newline`);
    for (const line of lines) {
      if (line === separator) { documents.push(current.join('')); current = []; } else current.push(line + '\n');
    }
    documents.push(current.join(''));
  }
  const ids = [];
  const start = process.hrtime.bigint();
  documents.forEach((d, k) => { if (k > 0) ids.push(50256); for (const id of encodeLong(reference, d)) ids.push(id); });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  fs.writeFileSync(outFile, ids.join('\n') + '\n');
  console.log(`reference: ${textFile}: ${documents.length} documents, ${ids.length} ids in ${seconds.toFixed(1)} s`);
}

const [command, ...args] = process.argv.slice(2);
if (command === 'corpus') corpus(args[0], args[1]);
else if (command === 'check') check(args[0]);
else if (command === 'encode-file') encodeFile(args[0], args[1], args[2], args[3]);
else { console.error('usage: bpe_reference.js corpus|check|encode-file ...'); process.exit(2); }
