import PackagePlugin
@main struct CashierPlugin: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {}
}
