import { test } from 'tap'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { dropMinorityCompilations } from '../coverage-variants.js'

const FILE = 'file:///app/plugins/a.ts'
const OTHER = 'file:///app/lib/b.ts'

const DEPENDENCY = 'file:///app/node_modules/fastify/fastify.js'

function processCoverage (lineLengths: number[], mapPath = '/app/plugins/a.ts') {
  return {
    result: [{ url: FILE, functions: [] }, { url: OTHER, functions: [] }, { url: 'node:fs', functions: [] }, { url: DEPENDENCY, functions: [] }, { url: 'file:///elsewhere/x.js', functions: [] }],
    'source-map-cache': {
      [FILE]: { lineLengths, data: { sources: [mapPath] } },
      [OTHER]: { lineLengths: [10, 0, 99], data: { sources: ['/app/lib/b.ts'] } },
      [DEPENDENCY]: { lineLengths: [1], data: { sources: [] } }
    }
  }
}

test('a process that compiled a file differently loses its coverage of that file only', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'coverage-variants-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  await writeFile(join(directory, 'one.json'), JSON.stringify(processCoverage([11170, 0, 300])))
  // The same code with a source map naming another path: not a different compilation.
  await writeFile(join(directory, 'two.json'), JSON.stringify(processCoverage([11170, 0, 310], '/elsewhere/a.ts')))
  await writeFile(join(directory, 'odd.json'), JSON.stringify(processCoverage([11171, 0, 300])))

  const dropped = await dropMinorityCompilations(directory, '/app')
  t.same([...dropped], [[FILE, 1]])
  const odd = JSON.parse(await readFile(join(directory, 'odd.json'), 'utf8')) as ReturnType<typeof processCoverage>
  t.same(odd.result.map((script) => script.url), [OTHER], 'the other file of the project stays')
  t.notOk(FILE in odd['source-map-cache'])
  for (const kept of ['one.json', 'two.json']) {
    const coverage = JSON.parse(await readFile(join(directory, kept), 'utf8')) as ReturnType<typeof processCoverage>
    t.same(coverage.result.map((script) => script.url), [FILE, OTHER], `${kept} keeps both files of the project, and nothing else (Node's own, dependencies, other places)`)
    t.same(Object.keys(coverage['source-map-cache']), [FILE, OTHER])
  }
})
