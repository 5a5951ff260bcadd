// The web bundle's values (API URL, client ids, keys) live in index.html as a JSON block, so one
// build of the sources serves any values: a server given a build without values writes its own in,
// a value cannot end the block early, and a build that has its values keeps them.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import type { Teardown } from '../helper.js'
import { pageConfig } from '../web-page.js'
import { startWebServer } from '../../web/server.js'
import { VALUES_PLACEHOLDER, bundleValues, withValues, type WebValues } from '../../web/build.js'

const PAGE = `<!doctype html><head><script id="calendar-config" type="application/json">${VALUES_PLACEHOLDER}</script></head><div id="app"></div>`

async function dist (t: Teardown, html: string): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'calendar-web-dist-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  await writeFile(join(directory, 'index.html'), html)
  return directory
}

test('a server writes its own values into a build without values, for every path the client routes', async (t) => {
  const values: WebValues = { apiUrl: 'https://cal.example.com/api', googleClientId: 'google-id.apps.example', placesApiKey: 'places-key' }
  const server = await startWebServer({ port: 0, ...values, distDir: await dist(t, PAGE) })
  t.teardown(() => server.close())
  for (const path of ['/', '/week', '/day/2026-03-02']) {
    const answer = await fetch(`${server.url}${path}`, { headers: { 'accept-encoding': 'gzip' } })
    t.equal(answer.status, 200)
    t.equal(answer.headers.get('cache-control'), 'no-cache', 'the page with its values is asked for again on every load')
    t.same(pageConfig(await answer.text()), bundleValues(values), `${path}: the values as the page reads them`)
  }
})

test('a value cannot end the block or start a script of its own', async (t) => {
  const hostile = '</script><script>alert(1)</script>&amp;'
  const html = withValues(PAGE, { apiUrl: 'https://cal.example.com/api', analyticsKey: hostile, analyticsHost: 'https://h.example' })
  t.equal(html.split('</script>').length, 2, 'one end of a script in the page: the block\'s own')
  t.equal(pageConfig(html)?.['analyticsKey'], hostile, 'and the page reads the value as it was given')
})

test('a build that has its values keeps them; a page without a place for values is refused at build time', async (t) => {
  const built = withValues(PAGE, { apiUrl: 'https://one.example/api' })
  const server = await startWebServer({ port: 0, apiUrl: 'https://other.example/api', distDir: await dist(t, built) })
  t.teardown(() => server.close())
  t.equal(pageConfig(await (await fetch(server.url)).text())?.['apiUrl'], 'https://one.example/api')
  t.throws(() => withValues(built, { apiUrl: 'https://other.example/api' }), /no place for its values/)
})
