-- :AcpPrompt {text} sends a prompt to the agent configured with require('acp_host').setup{...}
-- (started on first use, its replies stream into a split); :AcpStop shuts it down.
if vim.g.loaded_acp_host then
  return
end
vim.g.loaded_acp_host = true

vim.api.nvim_create_user_command('AcpPrompt', function(cmd)
  require('acp_host').prompt(cmd.args)
end, { nargs = '+', desc = 'Send a prompt to the ACP agent' })

vim.api.nvim_create_user_command('AcpStop', function()
  require('acp_host').stop()
end, { desc = 'Shut the ACP agent down' })

-- No agent process outlives Neovim.
vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    if package.loaded['acp_host'] then
      require('acp_host').stop()
    end
  end,
})
