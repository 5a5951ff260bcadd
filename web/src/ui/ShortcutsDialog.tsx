// "?": the list of keyboard shortcuts.
import { Dialog } from './Dialog.js'
import { keyName, SHORTCUTS } from '../lib/shortcuts.js'

export function ShortcutsDialog (props: { open: boolean, onClose: () => void }) {
  return (
    <Dialog open={props.open} labelledBy='shortcuts-title' onClose={props.onClose} class='dialog dialog-narrow'>
      {props.open && (
        <div class='shortcuts'>
          <h2 id='shortcuts-title'>Keyboard shortcuts</h2>
          <dl>
            {SHORTCUTS.map((shortcut) => (
              <div key={shortcut.action} class='shortcut'>
                <dt>{shortcut.keys.map((key, index) => <span key={key}>{index > 0 && ' or '}<kbd>{keyName(key)}</kbd></span>)}</dt>
                <dd>{shortcut.description}</dd>
              </div>
            ))}
            <div class='shortcut'>
              <dt><kbd>Alt</kbd> + arrows</dt>
              <dd>Move the focused event (with <kbd>Shift</kbd>: change its end)</dd>
            </div>
          </dl>
          <div class='actions'><button type='button' onClick={props.onClose}>Close</button></div>
        </div>
      )}
    </Dialog>
  )
}
