// Token ids of a text from independent implementations, as uint16
// little-endian, for comparison with package dataset's:
//
//   node ids.mjs gpt2 TEXT OUT              js-tiktoken's "gpt2", encode_ordinary
//   node ids.mjs hf TOKENIZER_JSON TEXT OUT  @huggingface/tokenizers (transformers.js's)
//
// Run from a folder where `npm install js-tiktoken @huggingface/tokenizers` ran
// (run.sh does it).
import { readFileSync, writeFileSync } from "node:fs";

const [mode, ...args] = process.argv.slice(2);
let ids;
if (mode === "gpt2") {
  const { getEncoding } = await import("js-tiktoken");
  const text = readFileSync(args[0], "utf8");
  // No special token allowed nor refused: "<|endoftext|>" is ordinary text.
  ids = getEncoding("gpt2").encode(text, [], []);
  args.shift();
} else if (mode === "hf") {
  const { Tokenizer } = await import("@huggingface/tokenizers");
  const json = JSON.parse(readFileSync(args[0], "utf8"));
  const text = readFileSync(args[1], "utf8");
  ids = new Tokenizer(json, {}).encode(text, { add_special_tokens: false }).ids;
  args.splice(0, 2);
} else {
  console.error("usage: node ids.mjs gpt2 TEXT OUT | hf TOKENIZER_JSON TEXT OUT");
  process.exit(2);
}
const out = Buffer.alloc(2 * ids.length);
ids.forEach((id, i) => out.writeUInt16LE(id, 2 * i));
writeFileSync(args[0], out);
console.error(`${mode}: ${ids.length} tokens`);
