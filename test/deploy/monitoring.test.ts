// The monitoring kit (monitoring/): Prometheus' configuration and alert rules checked by Prometheus'
// own promtool (config syntax, rule syntax, and the rules' unit tests, which fire each alert on the
// series an incident makes), every expression of the Grafana dashboard parsed by promtool too, and
// compose's `monitoring` profile wired to the ports the stack's configuration gives both services.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { parse, stringify } from 'yaml'
import { generateSecrets, productionConfig, STACK_METRICS_PORTS } from '../../lib/production-config.js'
import { writeTempFile } from '../processes.js'

const root = new URL('../../', import.meta.url)
const path = (relative: string): string => new URL(relative, root).pathname
const read = (relative: string): string => readFileSync(path(relative), 'utf8')

function promtool (...args: string[]): { status: number | null, output: string } {
  const result = spawnSync('promtool', args, { encoding: 'utf8' })
  if (result.error !== undefined) throw new Error(`promtool could not run (Debian's prometheus package; npm test installs it): ${result.error.message}`)
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

interface Panel { title?: string, type: string, targets?: Array<{ expr: string }> }
interface Rule { alert: string, expr: string, labels?: Record<string, string>, annotations?: Record<string, string> }

test('Prometheus\' configuration and the alert rules pass promtool, and each alert fires on its incident', async (t) => {
  const config = promtool('check', 'config', path('monitoring/prometheus.yml'))
  t.equal(config.status, 0, config.output)
  const rules = promtool('check', 'rules', path('monitoring/alerts.yml'))
  t.equal(rules.status, 0, rules.output)
  const unit = promtool('test', 'rules', path('monitoring/alerts.test.yml'))
  t.equal(unit.status, 0, unit.output)

  const groups = (parse(read('monitoring/alerts.yml')) as { groups: Array<{ rules: Rule[] }> }).groups
  const all = groups.flatMap((group) => group.rules)
  const tested = new Set([...read('monitoring/alerts.test.yml').matchAll(/alertname: (\w+)/g)].map((match) => match[1]))
  for (const rule of all) {
    t.ok(['warning', 'critical'].includes(rule.labels?.['severity'] ?? ''), `${rule.alert} has a severity`)
    t.ok((rule.annotations?.['summary'] ?? '').length > 0 && (rule.annotations?.['description'] ?? '').length > 40, `${rule.alert} says what it means and what to do`)
    t.match(read('docs/operations.md'), rule.alert, `${rule.alert} is in the operations guide`)
  }
  for (const name of ['SyncJobQueueBacklog', 'ChangeFeedLagHigh', 'ProviderErrorRateHigh', 'EventStreamsDropped', 'SyncJobsExhausted', 'OutboxNotDraining', 'MaintenanceFailing']) {
    t.ok(all.some((rule) => rule.alert === name), `the rules watch ${name}`)
  }
  for (const name of ['SyncJobQueueBacklog', 'ProviderErrorRateHigh', 'EventStreamsDropped', 'SyncJobsExhausted', 'OutboxNotDraining', 'MaintenanceFailing', 'CalendarServiceDown']) {
    t.ok(tested.has(name), `${name} has a unit test that makes it fire`)
  }
})

test('every expression of the Grafana dashboard is PromQL that promtool parses', async (t) => {
  const dashboard = JSON.parse(read('monitoring/grafana/dashboards/calendar.json')) as { uid: string, panels: Panel[] }
  t.equal(dashboard.uid, 'calendar-service')
  const expressions = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title ?? '', expr: target.expr })))
  t.ok(expressions.length >= 20, `${expressions.length} expressions`)
  // promtool parses expressions in rule files only: each becomes a recording rule of its own.
  const asRules = stringify({ groups: [{ name: 'dashboard', rules: expressions.map(({ expr }, index) => ({ record: `dashboard:expression_${index}`, expr })) }] })
  const file = await writeTempFile('dashboard-rules.yml', asRules)
  const checked = promtool('check', 'rules', file)
  t.equal(checked.status, 0, checked.output)
  t.match(checked.output, `SUCCESS: ${expressions.length} rules found`)
  const provisioning = parse(read('monitoring/grafana/provisioning/datasources/prometheus.yml')) as { datasources: Array<{ uid: string, url: string }> }
  t.equal(provisioning.datasources[0]?.uid, 'calendar-prometheus', 'the panels\' data source is the provisioned one')
  t.equal(provisioning.datasources[0]?.url, 'http://prometheus:9090')
})

test('compose\'s monitoring profile scrapes both services on the ports the stack\'s configuration gives them, and publishes neither', async (t) => {
  interface Service { profiles?: string[], ports?: string[], configs?: Array<{ source: string, target: string }> }
  const compose = parse(read('compose.yaml')) as { services: Record<string, Service>, configs: Record<string, { file: string }> }
  for (const name of ['prometheus', 'grafana']) {
    const service = compose.services[name]
    t.same(service?.profiles, ['monitoring'], `${name} runs with --profile monitoring only`)
    t.ok(service?.ports?.every((port) => port.startsWith('127.0.0.1:')), `${name} is published on 127.0.0.1 only`)
    for (const { source } of service?.configs ?? []) {
      const file = compose.configs[source]?.file ?? ''
      t.doesNotThrow(() => read(file.replace(/^\.\//, '')), `${name}'s ${source} (${file}) is in the repository`)
    }
  }
  t.equal(compose.services['prometheus']?.configs?.find((config) => config.source === 'prometheus-alerts')?.target, '/etc/prometheus/alerts.yml', 'the rules beside prometheus.yml, where its rule_files names them')
  for (const name of ['backend', 'sync']) {
    const published = (compose.services[name]?.ports ?? []).join(' ')
    t.notMatch(published, String(STACK_METRICS_PORTS[name as 'backend' | 'sync']), `${name}'s internal port is published nowhere`)
  }
  const prometheus = parse(read('monitoring/prometheus.yml')) as { scrape_configs: Array<{ job_name: string, static_configs: Array<{ targets: string[] }> }> }
  const targets = Object.fromEntries(prometheus.scrape_configs.map((scrape) => [scrape.job_name, scrape.static_configs.flatMap((config) => config.targets)]))
  t.same(targets, { 'calendar-backend': [`backend:${STACK_METRICS_PORTS.backend}`], 'calendar-sync': [`sync:${STACK_METRICS_PORTS.sync}`] })

  const config = productionConfig({ webUrl: 'https://calendar.example.org', apiUrl: 'https://calendar.example.org/api', version: '1.4.0', webPort: 9443, backendPort: 3443 }, generateSecrets())
  t.match(config['backend'], { metricsPort: STACK_METRICS_PORTS.backend, metricsHost: '0.0.0.0' }, 'npm run setup gives the backend its internal port on the stack\'s network')
  t.match(config['sync'], { metricsPort: STACK_METRICS_PORTS.sync, metricsHost: '0.0.0.0' })
})
