-- Headless test of the plugin: a full turn against the mock agent (its default scenario: greets,
-- asks permission to write notes.txt, reads README.md, writes notes.txt, runs `echo`).
--
--   ACPH_LIB=target/debug/libacp_host.so ACPH_MOCK_AGENT=target/debug/acp-mock-agent \
--     nvim --headless -u NONE -i NONE --cmd 'set rtp+=examples/neovim' \
--     -c 'luafile examples/neovim/test/turn_test.lua'
--
-- README.md exists only as an unsaved buffer: the agent can only have read it from Neovim.
-- Exits 0 on success, 1 (cquit) on any failure or after 60 s.
local function fail(msg)
  io.stderr:write('turn_test: FAIL: ' .. tostring(msg) .. '\n')
  vim.cmd('cquit 1')
end

local function run()
  local base = os.getenv('ACPH_SCRATCH') or '/tmp'
  local cwd = assert(vim.loop.fs_mkdtemp(base .. '/acph-nvim-XXXXXX'))
  local readme = cwd .. '/README.md'
  local unsaved = { '# Unsaved README', '', 'typed in Neovim, never written' }
  vim.cmd('edit ' .. vim.fn.fnameescape(readme))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, unsaved)
  assert(vim.bo.modified and vim.fn.filereadable(readme) == 0)

  vim.cmd('runtime plugin/acp_host.lua')
  assert(vim.fn.exists(':AcpPrompt') == 2, ':AcpPrompt is not defined')

  local acp = require('acp_host')
  local client
  local ready = false
  client = acp.start({
    agent = { command = assert(os.getenv('ACPH_MOCK_AGENT'), 'ACPH_MOCK_AGENT') },
    cwd = cwd,
    permission = 'first_allow',
  }, function()
    ready = true
  end)
  if not vim.wait(30000, function()
    return ready or client.failed ~= nil
  end, 20) or not ready then
    return fail('the session did not open: ' .. vim.inspect(client.failed))
  end

  local done, ok, result = false, nil, nil
  client:prompt('take notes', function(o, r)
    done, ok, result = true, o, r
  end)
  if not vim.wait(30000, function()
    return done
  end, 20) then
    return fail('the turn did not end')
  end
  if not ok then
    return fail('the turn failed: ' .. vim.inspect(result))
  end
  if result.stopReason ~= 'end_turn' then
    return fail('stopReason ' .. tostring(result.stopReason))
  end

  -- The agent's reply, streamed into the scratch buffer.
  local text = table.concat(vim.api.nvim_buf_get_lines(client.buf, 0, -1, false), '\n')
  for _, want in ipairs({
    '> take notes',
    'Hello! I am the ACP mock agent. I will take a few notes about your project in notes.txt.',
    'All done. Have a nice day!',
  }) do
    if not text:find(want, 1, true) then
      return fail('buffer lacks ' .. vim.inspect(want) .. ':\n' .. text)
    end
  end

  -- The permission was answered with the agent's allow option (the host's own terminal
  -- permission may follow; every answer allowed).
  local p = client.permissions[1]
  if not p or p.title ~= 'Write notes.txt' or p.option ~= 'allow-once' then
    return fail('permission answers: ' .. vim.inspect(client.permissions))
  end

  -- README.md was served from the unsaved buffer, notes.txt written to disk by the plugin.
  local served = {}
  for _, s in ipairs(client.served) do
    served[s.method] = s
  end
  local r, w = served['fs/read_text_file'], served['fs/write_text_file']
  if not (r and r.from == 'buffer' and r.path == readme) then
    return fail('read not served from the buffer: ' .. vim.inspect(client.served))
  end
  if not (w and w.from == 'disk') then
    return fail('write: ' .. vim.inspect(client.served))
  end
  local bytes = #table.concat(unsaved, '\n') + 1
  local saw_read = false
  for _, ev in ipairs(client.events) do
    if ev.kind == 'fs_read' then
      saw_read = ev.data.outcome == 'ok' and ev.data.bytes == bytes
    end
  end
  if not saw_read then
    return fail('no fs_read of ' .. bytes .. ' bytes')
  end
  local f = io.open(cwd .. '/notes.txt', 'rb')
  local notes = f and f:read('*a') or ''
  if f then
    f:close()
  end
  if not notes:find('Notes from acp-mock-agent', 1, true) then
    return fail('notes.txt: ' .. vim.inspect(notes))
  end

  -- Each call (spawn, session, prompt) gave its id back at its call_completed: freeing one again
  -- is stale_id.
  local lib = require('ffi').load(assert(os.getenv('ACPH_LIB'), 'ACPH_LIB'))
  local completed = 0
  for _, ev in ipairs(client.events) do
    if ev.kind == 'call_completed' then
      completed = completed + 1
      if lib.acph_call_free(client.host, ev.data.call, nil) ~= lib.ACPH_STATUS_STALE_ID then
        return fail('call ' .. tostring(ev.data.call) .. ' was not released at its call_completed')
      end
    end
  end
  if completed ~= 3 then
    return fail(completed .. ' call_completed events, wanted 3')
  end

  -- Stopping frees the host: the agent process is gone.
  local pid
  for _, ev in ipairs(client.events) do
    if ev.kind == 'agent_ready' then
      pid = ev.data.pid
    end
  end
  client:stop()
  -- Gone, or a zombie not yet reaped (a zombie runs no code).
  local function gone()
    local st = io.open('/proc/' .. pid .. '/stat', 'r')
    if not st then
      return true
    end
    local line = st:read('*l') or ''
    st:close()
    return line:match('^%d+ %b() (%a)') == 'Z'
  end
  if not pid or not vim.wait(5000, gone, 20) then
    return fail('agent process ' .. tostring(pid) .. ' still alive')
  end
  io.stdout:write('turn_test: ok\n')
  vim.cmd('qall!')
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  fail(err)
end
