// Prints, as JSON, the code point ranges of the character classes tiktoken's
// split patterns use, as this JavaScript engine's regular expressions (and
// so js-tiktoken) classify them, with the engine's Unicode version. Go's
// unicode tables are of an older Unicode; ../../genunicode.go reads this
// output and writes the runes whose classes differ (unicode_tables.go):
//
//   node unicode.mjs > /tmp/classes.json && (cd ../.. && go run genunicode.go /tmp/classes.json)
const classes = {
  L: /\p{L}/u,
  N: /\p{N}/u,
  Upper: /[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]/u,
  Lower: /[\p{Ll}\p{Lm}\p{Lo}\p{M}]/u,
};
const out = { unicode: process.versions.unicode, icu: process.versions.icu, node: process.version, classes: {} };
for (const [name, re] of Object.entries(classes)) {
  const ranges = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue; // surrogates are no characters
    if (!re.test(String.fromCodePoint(cp))) continue;
    const last = ranges[ranges.length - 1];
    if (last && last[1] === cp - 1) last[1] = cp;
    else ranges.push([cp, cp]);
  }
  out.classes[name] = ranges;
}
process.stdout.write(JSON.stringify(out) + "\n");
