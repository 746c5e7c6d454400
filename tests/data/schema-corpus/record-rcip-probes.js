// Records rcip's own probes against Ajv in the layout of the shared corpus
// (README.md beside this file): node record.js CASES.json > OUT.json
// CASES.json: [{"id", "description", "schema", "tests": [{"description", "data"}]}]
const Ajv2020 = require('ajv/dist/2020').default;
const fs = require('fs');
const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const entries = [];
for (const c of cases) {
  const ajv = new Ajv2020({strict: true, allErrors: true});
  const entry = {id: c.id, source: 'probe', description: c.description, schema: c.schema};
  let validate;
  try {
    validate = ajv.compile(c.schema);
    entry.compile = 'ok';
  } catch (e) {
    entry.compile = 'error';
    entry.compileMessage = e.message;
  }
  entry.tests = c.tests.map((t) => {
    const out = {description: t.description, data: t.data};
    if (validate) {
      out.valid = validate(t.data);
      out.issues = (validate.errors || []).map((e) => ({instancePath: e.instancePath, keyword: e.keyword, params: e.params, message: e.message}));
    }
    return out;
  });
  entries.push(entry);
}
const version = require('ajv/package.json').version;
process.stdout.write(JSON.stringify({recorder: {ajv: version, class: 'Ajv2020', options: {strict: true, allErrors: true}}, entries}, null, 1) + '\n');
