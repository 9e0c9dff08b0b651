// Holds a built streamlab site's data for programs to their published contract, with a validator that shares no
// code with the lab's Rust types: verdicts.json, runs.json and badge.json against the schemas the site publishes
// beside them; every data/<matrix>.csv, its header (the schema's columns, in order) and every row, against
// data/csv.schema.json; every runs/<id>/bmf.json against the Bencher Metric Format's own JSON Schema. Prints one line
// per file and every violation as `file: where: what`, and exits 1 if there is any. Usage: node contract.mjs SITE_DIR
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'csv-parse/sync';

const site = path.resolve(process.argv[2] ?? '');
if (!process.argv[2] || !fs.existsSync(path.join(site, 'verdicts.json'))) {
  console.error(`usage: node contract.mjs SITE_DIR (no verdicts.json in ${site})`);
  process.exit(2);
}

// The Bencher Metric Format as bencher.dev/docs/reference/bencher-metric-format states it (JSON Schema draft-07):
// benchmark name -> measure -> { value, lower_value?, upper_value? }, the value required and each a number; the
// page's limits on names (a benchmark's up to 1024 characters, a measure's up to 64) are added.
const BMF = {
  $schema: 'http://json-schema.org/draft-07/schema',
  type: 'object',
  propertyNames: { minLength: 1, maxLength: 1024 },
  patternProperties: {
    '.+': {
      type: 'object',
      propertyNames: { minLength: 1, maxLength: 64 },
      patternProperties: {
        '.+': {
          type: 'object',
          properties: { value: { type: 'number' }, lower_value: { type: 'number' }, upper_value: { type: 'number' } },
          required: ['value'],
        },
      },
    },
  },
};

const failures = [];
const read = (rel) => fs.readFileSync(path.join(site, rel), 'utf8');

function validator(schemaFile) {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv.compile(JSON.parse(read(schemaFile)));
}

function report(rel, errors) {
  for (const e of errors ?? []) {
    const where = e.instancePath || '/';
    const extra = e.params?.additionalProperty ?? e.params?.missingProperty;
    failures.push(`${rel}: ${where}: ${e.message}${extra ? ` (${extra})` : ''}`);
  }
}

function checkJson(rel, validate) {
  let doc;
  try {
    doc = JSON.parse(read(rel));
  } catch (e) {
    failures.push(`${rel}: not JSON: ${e.message}`);
    return;
  }
  if (!validate(doc)) report(rel, validate.errors);
  console.log(`${validate.errors ? 'FAIL' : 'ok  '} ${rel}`);
}

for (const name of ['verdicts', 'runs', 'badge']) {
  checkJson(`${name}.json`, validator(`${name}.schema.json`));
}

// The CSVs: the header is the schema's columns in its order; each row, as a CSV reader gives it, one instance.
const csvSchema = JSON.parse(read('data/csv.schema.json'));
const columns = Object.keys(csvSchema.properties);
const row = validator('data/csv.schema.json');
const dataDir = path.join(site, 'data');
for (const file of fs.readdirSync(dataDir).filter((f) => f.endsWith('.csv')).sort()) {
  const rel = `data/${file}`;
  const before = failures.length;
  const table = parse(read(rel), { relax_column_count: false });
  const header = table[0] ?? [];
  if (header.join(',') !== columns.join(',')) {
    failures.push(`${rel}: header is [${header.join(', ')}], the schema's columns are [${columns.join(', ')}]`);
  } else {
    table.slice(1).forEach((cells, i) => {
      const instance = Object.fromEntries(header.map((h, k) => [h, cells[k]]));
      if (!row(instance)) report(`${rel} line ${i + 2}`, row.errors);
    });
  }
  console.log(`${failures.length > before ? 'FAIL' : 'ok  '} ${rel} (${table.length - 1} rows)`);
}

const bmfAjv = new Ajv({ allErrors: true, strict: true });
const bmf = bmfAjv.compile(BMF);
const runsDir = path.join(site, 'runs');
let bmfFiles = 0;
for (const run of fs.existsSync(runsDir) ? fs.readdirSync(runsDir).sort() : []) {
  const rel = `runs/${run}/bmf.json`;
  if (!fs.existsSync(path.join(site, rel))) {
    failures.push(`${rel}: missing (every run publishes its figures in Bencher's metric format)`);
    continue;
  }
  const before = failures.length;
  try {
    if (!bmf(JSON.parse(read(rel)))) report(rel, bmf.errors);
  } catch (e) {
    failures.push(`${rel}: not JSON: ${e.message}`);
  }
  bmfFiles += 1;
  if (failures.length > before) console.log(`FAIL ${rel}`);
}
console.log(`${bmfFiles} bmf.json files checked against the Bencher Metric Format`);

if (failures.length > 0) {
  for (const f of failures.slice(0, 50)) console.error(f);
  if (failures.length > 50) console.error(`and ${failures.length - 50} more`);
  console.error(`${failures.length} violation(s) of the site's data contract`);
  process.exit(1);
}
console.log('the site keeps its data contract');
