public enum CashierCommands {}
