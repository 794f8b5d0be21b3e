/**
 * The VS Code glue: commands, the output channel, the quick pick, cancellation. Everything else is
 * in core.ts (tested without VS Code).
 */
import * as os from 'node:os';
import * as vscode from 'vscode';

import { AgentRunner, type AgentConfig, type PickItem, type Picker } from './core';

let runner: AgentRunner | undefined;

function config(): AgentConfig {
  const c = vscode.workspace.getConfiguration('acpHost');
  return {
    command: c.get<string>('agent.command', 'claude-agent-acp'),
    args: c.get<string[]>('agent.args', []),
    policy: c.get<'ask' | 'read-only' | 'deny-all'>('policy', 'ask'),
  };
}

/** The permission pick list as a VS Code quick pick, closed when the request is settled elsewhere. */
const quickPick: Picker = async (items, { title, placeHolder, signal }) => {
  const source = new vscode.CancellationTokenSource();
  const onAbort = () => source.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    type Item = vscode.QuickPickItem & { item: PickItem };
    const picked = await vscode.window.showQuickPick<Item>(
      items.map((item) => ({ label: item.label, description: item.description, item })),
      { title, placeHolder, ignoreFocusOut: true },
      source.token,
    );
    return picked?.item;
  } finally {
    signal.removeEventListener('abort', onAbort);
    source.dispose();
  }
};

/** The text of an open document (unsaved edits included), so the agent reads what the user sees. */
function openText(path: string): string | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === path)?.getText();
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('ACP Agent');
  runner = new AgentRunner(config, { output, picker: quickPick, openText });
  const active = runner;

  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('acpHost.prompt', async () => {
      const prompt = await vscode.window.showInputBox({ prompt: 'What should the agent do?', ignoreFocusOut: true });
      if (!prompt) return;
      const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
      output.show(true);
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Agent working…', cancellable: true },
        async (_progress, token) => {
          const ac = new AbortController();
          token.onCancellationRequested(() => ac.abort());
          try {
            const turn = await active.prompt(cwd, prompt, ac.signal);
            if (turn.stopReason !== 'end_turn') void vscode.window.showInformationMessage(`Agent stopped: ${turn.stopReason}`);
          } catch (e) {
            void vscode.window.showErrorMessage(`Agent failed: ${e instanceof Error ? e.message : String(e)}`);
          }
        },
      );
    }),
    vscode.commands.registerCommand('acpHost.stop', () => active.stop()),
    { dispose: () => void active.dispose() },
  );
}

export async function deactivate(): Promise<void> {
  await runner?.dispose();
  runner = undefined;
}
