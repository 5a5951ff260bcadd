// Connect a CalDAV account (iCloud, Fastmail, Nextcloud, ...) with its server address, user name
// and app password, or, for a connection whose password the server stopped accepting, enter the
// password again. A refusal keeps what was typed and marks the field it is about.
import { useEffect, useRef, useState } from 'preact/hooks'
import { Dialog } from './Dialog.js'
import { connectCalDav, knownAccount } from '../data/caldav.js'
import { notify } from '../data/calendar.js'
import { CALDAV_EXAMPLE_URL, normaliseServerUrl, type CalDavFailure } from '../lib/caldav.js'

/** null: closed; connectionId null: a new account, otherwise the connection to repair. */
export type CalDavDialogState = { connectionId: string | null } | null

export function CalDavDialog (props: { state: CalDavDialogState, onClose: () => void }) {
  const { state } = props
  return (
    <Dialog open={state !== null} labelledBy='caldav-title' onClose={props.onClose} class='dialog dialog-narrow'>
      {state !== null && <CalDavForm key={state.connectionId ?? 'new'} connectionId={state.connectionId} onDone={props.onClose} />}
    </Dialog>
  )
}

function describedBy (...ids: Array<string | false>): string | undefined {
  const list = ids.filter((id): id is string => id !== false)
  return list.length === 0 ? undefined : list.join(' ')
}

function CalDavForm (props: { connectionId: string | null, onDone: () => void }) {
  const { connectionId } = props
  const known = connectionId === null ? null : knownAccount(connectionId)
  const [serverUrl, setServerUrl] = useState(known?.serverUrl ?? '')
  const [username, setUsername] = useState(known?.username ?? '')
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<CalDavFailure | null>(null)
  const urlInput = useRef<HTMLInputElement>(null)
  const passwordInput = useRef<HTMLInputElement>(null)
  const repair = connectionId !== null

  // Focus goes to the field the refusal is about; the text is selected so typing replaces it.
  useEffect(() => {
    const target = failure?.field === 'serverUrl' ? urlInput.current : failure?.field === 'credentials' ? passwordInput.current : null
    target?.focus()
    target?.select()
  }, [failure])

  async function submit (event: Event) {
    event.preventDefault()
    if (busy) return
    const url = normaliseServerUrl(serverUrl)
    if (url === null) {
      setFailure({ field: 'serverUrl', message: `Enter the server address, for example ${CALDAV_EXAMPLE_URL}.` })
      return
    }
    setBusy(true)
    setFailure(null)
    const result = await connectCalDav({ serverUrl: url, username: username.trim(), password, connectionId })
    setBusy(false)
    if (!result.ok) {
      setFailure(result)
      return
    }
    const found = `${result.calendars} ${result.calendars === 1 ? 'calendar' : 'calendars'}`
    notify(result.created
      ? `CalDAV calendar connected (${found}). Its events are being imported.`
      : `CalDAV calendar reconnected (${found}). Its events are being brought up to date.`)
    props.onDone()
  }

  const urlInvalid = failure?.field === 'serverUrl'
  const credentialsInvalid = failure?.field === 'credentials'
  // Not a sign-in to this site, and an app password is made by the provider, not here: "off"
  // keeps browsers from offering this site's saved password or generating a new one.
  return (
    <form onSubmit={submit} class='caldav-form' aria-busy={busy}>
      <h2 id='caldav-title'>{repair ? 'Enter the CalDAV password again' : 'Connect a CalDAV calendar'}</h2>
      <p class='hint'>
        {repair
          ? 'The server no longer accepts the saved password, so this calendar stopped syncing. An app password that was revoked needs a new one.'
          : 'For iCloud, Fastmail, Nextcloud and other calendar servers that speak CalDAV.'}
      </p>
      <div class='field'>
        <label for='caldav-url'>Server address</label>
        <input
          id='caldav-url' ref={urlInput} type='text' inputMode='url' autocomplete='off' spellcheck={false} autocapitalize='none'
          required placeholder={CALDAV_EXAMPLE_URL} value={serverUrl}
          aria-invalid={urlInvalid} aria-describedby={describedBy(urlInvalid && 'caldav-error')}
          onInput={(event) => setServerUrl(event.currentTarget.value)}
        />
      </div>
      <div class='field'>
        <label for='caldav-user'>User name</label>
        <input
          id='caldav-user' type='text' autocomplete='off' spellcheck={false} autocapitalize='none' required value={username}
          aria-invalid={credentialsInvalid} aria-describedby={describedBy('caldav-user-hint', credentialsInvalid && 'caldav-error')}
          onInput={(event) => setUsername(event.currentTarget.value)}
        />
        <p id='caldav-user-hint' class='hint'>For iCloud, your Apple ID email.</p>
      </div>
      <div class='field'>
        <label for='caldav-password'>App password</label>
        <input
          id='caldav-password' ref={passwordInput} type='password' autocomplete='off' required value={password} autoFocus={repair && known !== null}
          aria-invalid={credentialsInvalid} aria-describedby={describedBy('caldav-password-hint', credentialsInvalid && 'caldav-error')}
          onInput={(event) => setPassword(event.currentTarget.value)}
        />
        <p id='caldav-password-hint' class='hint'>
          For iCloud, create an app-specific password at appleid.apple.com (Sign-In and Security); your Apple ID password does not work here.
        </p>
      </div>
      {failure !== null && <p id='caldav-error' role='alert' class='form-error'>{failure.message}</p>}
      <div class='actions'>
        <button type='button' onClick={props.onDone}>Cancel</button>
        {/* Not disabled while busy: a disabled button would drop the focus the person is on. */}
        <button type='submit' class='primary' aria-disabled={busy}>
          {busy ? 'Connecting…' : repair ? 'Save password' : 'Connect'}
        </button>
      </div>
    </form>
  )
}
