// Validates an OpenAPI document (default docs/openapi.json) against the
// official OpenAPI 3.1 schema that @seriousme/openapi-schema-validator
// bundles, and checks that it is 3.1 and that every $ref resolves.
// Exits 0 when valid, 1 with the errors on stderr otherwise, 2 on misuse.
//   node tools/openapi/validate.mjs [FILE]
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";

const here = path.dirname(fileURLToPath(import.meta.url));
const file = process.argv[2] ?? path.join(here, "..", "..", "docs", "openapi.json");
if (process.argv.length > 3) {
  console.error("usage: validate.mjs [FILE]");
  process.exit(2);
}

const spec = JSON.parse(await readFile(file, "utf8"));
const validator = new Validator();
const res = await validator.validate(spec);
if (!res.valid) {
  console.error(`${file}: not a valid OpenAPI document`);
  console.error(JSON.stringify(res.errors, null, 2));
  process.exit(1);
}
if (validator.version !== "3.1") {
  console.error(`${file}: OpenAPI ${validator.version}, expected 3.1`);
  process.exit(1);
}
try {
  validator.resolveRefs(); // throws on a $ref that points nowhere
} catch (e) {
  console.error(`${file}: ${e.message}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${spec.openapi}`);
